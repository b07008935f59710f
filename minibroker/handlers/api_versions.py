"""ApiVersions v0-4.

Behaviour: advertises exactly the handlers registered in :mod:`minibroker.handlers`.
The server answers an unknown ApiVersions version itself, in the v0 body with
UNSUPPORTED_VERSION (KIP-511), before any handler runs.
Not implemented: features (KIP-584) are not advertised; client software name/version
are accepted but not validated.
"""

from kproto.protocol import ApiKey
from kproto.protocol.messages import ApiVersionsResponse
from minibroker.handlers import handles, supported_versions


def api_versions_response(error_code: int = 0) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=error_code,
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in supported_versions()],
    )


@handles(ApiKey.API_VERSIONS, 0, 4)
async def handle(state, header, request):
    return api_versions_response()
