"""Schema table: what a connection does first. SaslHandshake, ApiVersions, SaslAuthenticate.

Written in the :mod:`kproto.protocol.spec` DSL; one entry per API key, in key order.
"""

from kproto.protocol.spec import Route, api

__all__ = ["APIS"]

APIS = (
    api(
        17, "SaslHandshake", "0-1", flexible="none", route=Route.ANY,
        notes="""
        Sent on a fresh connection before authenticating. v0: the SASL tokens follow as raw size-prefixed
        frames. v1: they travel in SaslAuthenticate requests (KIP-152).
        The version cannot be bumped because of client negotiation bugs (KAFKA-9577).
        """,
        request="""
        mechanism  string
        """,
        response="""
        error_code  int16
        mechanisms  []string
        """,
    ),
    api(
        18, "ApiVersions", "0-4", flexible="3+", route=Route.ANY,
        notes="""
        Sent first on every connection. v1: throttle_time_ms. v2: same as v1.
        v3: first flexible version; client_software_name/version, supported and finalized features (KIP-511, KIP-584).
        v4: SupportedFeatures.min_version may be 0 (KAFKA-17011).
        The response always uses response header v0, even when flexible. A broker that does not know the
        requested version answers in the v0 body with UNSUPPORTED_VERSION and its own ApiVersions range (KIP-511).
        """,
        request="""
        client_software_name     string  v3+  ignorable
        client_software_version  string  v3+  ignorable
        """,
        response="""
        error_code                int16
        api_keys                  []ApiVersion
          api_key                 int16
          min_version             int16
          max_version             int16
        throttle_time_ms          int32                  v1+  ignorable
        supported_features        []SupportedFeatureKey  v3+  tag=0  ignorable
          name                    string                 v3+
          min_version             int16                  v3+
          max_version             int16                  v3+
        finalized_features_epoch  int64                  v3+  tag=1  default=-1  ignorable
        finalized_features        []FinalizedFeatureKey  v3+  tag=2  ignorable
          name                    string                 v3+
          max_version_level       int16                  v3+
          min_version_level       int16                  v3+
        zk_migration_ready        bool                   v3+  tag=3  ignorable
        """,
    ),
    api(
        36, "SaslAuthenticate", "0-2", flexible="2+", route=Route.ANY,
        notes="""
        Carries the SASL exchange after SaslHandshake v1 (KIP-152).
        v1: session_lifetime_ms for re-authentication (KIP-368). v2: first flexible version.
        """,
        request="""
        auth_bytes  bytes
        """,
        response="""
        error_code           int16
        error_message        string  null
        auth_bytes           bytes
        session_lifetime_ms  int64   v1+  ignorable
        """,
    ),
)
