"""The asyncio faces of kproto's clients: ``from kproto.aio import AIOConsumer``."""

from kproto.admin import AIOAdminClient
from kproto.consumer import AIOConsumer
from kproto.producer import AIOProducer

__all__ = ["AIOAdminClient", "AIOConsumer", "AIOProducer"]
