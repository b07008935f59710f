"""The partition-side tests of transactions play the transaction coordinator themselves
(raw transactional Produce, then WriteTxnMarkers): their brokers run with KIP-890's
verification off (``transaction.partition.verification.enable=false``, issue 14 step 2).
Modules with a real coordinator set their own ``minibroker_config`` and keep Kafka's default."""

import pytest

#: Broker settings of tests that play the coordinator (KIP-890 part 1 off).
NO_VERIFICATION = {"transaction.partition.verification.enable": False}


@pytest.fixture(scope="module")
def minibroker_config():
    return NO_VERIFICATION
