"""ApiVersions v0-4.

Behaviour: advertises exactly the handlers registered in :mod:`minibroker.handlers`.
The server answers an unknown ApiVersions version itself, in the v0 body with
UNSUPPORTED_VERSION (KIP-511), before any handler runs.

Features (KIP-584, v3+): the one feature minibroker has, ``transaction.version``
(Kafka's ``TransactionVersion``), supported from 0 to 2 and finalized at the broker's
``transaction.version`` setting. A finalized level of 0 is not listed, as Kafka lists only
features finalized above 0, so that clients see a Kafka 3.x broker. Below v4 a supported
minimum of 0 is sent as 1 (KAFKA-17011: older Java clients refuse 0). As Kafka's
transaction version gates EndTxn v5 and Produce v12 (``EndTxnRequest`` and
``ProduceRequest``'s ``LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2``, 4 and 11), a broker
whose ``transaction.version`` is below 2 advertises them no higher than those, so a client
that picks the highest version it knows never asks for KIP-890 part 2 there.
Not implemented: the other features of Kafka (``metadata.version``, ``kraft.version``,
``group.version``...); client software name/version are accepted but not validated.
"""

from kproto.protocol import ApiKey
from kproto.protocol.messages import ApiVersionsResponse
from minibroker.handlers import handles, supported_versions

__all__ = ["TRANSACTION_VERSION", "api_versions_response"]

#: The feature's name and the levels minibroker implements (Kafka's TV_0, TV_1, TV_2).
TRANSACTION_VERSION = "transaction.version"
_TV_SUPPORTED = (0, 2)
# EndTxnRequest / ProduceRequest.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2
_BEFORE_TV2 = {ApiKey.END_TXN: 4, ApiKey.PRODUCE: 11}


def api_versions_response(error_code: int = 0, *, version: int = 0,
                          transaction_version: int | None = None) -> ApiVersionsResponse:
    """The answer to an ApiVersions of ``version``; ``transaction_version`` is the
    finalized feature level (None: the versions uncapped, no features, as for the
    UNSUPPORTED_VERSION answer in the v0 body)."""
    R = ApiVersionsResponse
    keys = []
    for key, lo, hi in supported_versions():
        if transaction_version is not None and transaction_version < 2 and key in _BEFORE_TV2:
            hi = min(hi, _BEFORE_TV2[key])
        keys.append(R.ApiVersion(api_key=key, min_version=lo, max_version=hi))
    features = {}
    if transaction_version is not None:
        low = _TV_SUPPORTED[0] if version >= 4 else max(1, _TV_SUPPORTED[0])
        features["supported_features"] = [R.SupportedFeatureKey(name=TRANSACTION_VERSION, min_version=low,
                                                                max_version=_TV_SUPPORTED[1])]
        if transaction_version > 0:
            features["finalized_features_epoch"] = 0
            features["finalized_features"] = [R.FinalizedFeatureKey(
                name=TRANSACTION_VERSION, max_version_level=transaction_version, min_version_level=transaction_version)]
    return R(error_code=error_code, api_keys=keys, **features)


@handles(ApiKey.API_VERSIONS, 0, 4)
async def handle(state, header, request):
    return api_versions_response(version=header.api_version,
                                 transaction_version=state.config["transaction.version"])
