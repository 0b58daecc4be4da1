"""Service tests over real sockets."""

from textenvs.service.tenancy import ClientLimits

#: for a server that one module's tests share to test the API, not the rates (those are
#: tested in test_isolation and test_refusals): the tests create sessions faster than a
#: tenant's default allowance (20 at once) on a fast machine
SHARED_SERVER_LIMITS = ClientLimits(creates_per_minute=0, resets_per_minute=0, reads_per_second=0)
