"""Property-based requests generated from the service's own OpenAPI schema: no 5xx, ever.

Schemathesis draws requests (valid and invalid: wrong types, missing fields, odd strings)
for every operation in `/openapi.json`; each goes over a real socket to the service.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread

schemathesis = pytest.importorskip("schemathesis")

EXAMPLES_PER_OPERATION = 15  # x 2 modes x ~9 operations: about 270 requests
FAST_EXAMPLES_PER_OPERATION = 4  # the default (not thorough) profile: about 70 requests


def for_every_case(schema: Any, examples: int, check_case: Callable[[Any], None]) -> None:
    """`check_case` on generated cases of every operation, valid ones and invalid ones."""
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 8
    modes = [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE]
    for operation, mode in itertools.product(operations, modes):

        @given(case=operation.as_strategy(mode))
        @settings(
            max_examples=examples,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: schemathesis.Case) -> None:
            check_case(case)

        try:
            check()
        except Unsatisfiable:
            # No invalid request exists for an operation without inputs.
            assert mode == schemathesis.GenerationMode.NEGATIVE


@pytest.mark.slow
def test_no_server_errors_on_generated_requests(thorough: bool) -> None:
    examples = EXAMPLES_PER_OPERATION if thorough else FAST_EXAMPLES_PER_OPERATION
    statuses: set[int] = set()

    def no_server_error(case: schemathesis.Case) -> None:
        response = case.call(timeout=30)
        statuses.add(response.status_code)
        assert response.status_code < 500, (case.method, case.path, response.text)

    with serve_in_thread(create_app(max_sessions=50, idle_timeout=60)) as url:
        for_every_case(schemathesis.openapi.from_url(f"{url}/openapi.json"), examples,
                       no_server_error)  # fmt: skip
    # The generated requests really exercised both success and rejection paths, and
    # with `env` an enum in the schema, sessions really got created.
    assert 201 in statuses and any(400 <= s < 500 for s in statuses)


def test_every_check_passes_with_and_without_a_token(thorough: bool) -> None:
    """Every Schemathesis check (status codes and response bodies as documented, content
    types, headers...) on every operation, with a valid token and with none. A
    schema-valid request may still be 422 for what JSON Schema cannot say (options a
    scenario rejects, control characters, a seed and a set together, 7.0 as a seed)."""
    token = "alice-token-0123456789"
    examples = EXAMPLES_PER_OPERATION if thorough else FAST_EXAMPLES_PER_OPERATION

    def every_check(case: schemathesis.Case) -> None:
        case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        case.call_and_validate(timeout=30)

    # refusals unpaused: the calls without a token are all 401s
    app = create_app(max_sessions=50, idle_timeout=60, tokens={"alice": token}, refusal_pause=0)
    with serve_in_thread(app) as url:
        schema = schemathesis.openapi.from_url(
            f"{url}/openapi.json", headers={"Authorization": f"Bearer {token}"}
        )
        acceptance = schema.config.checks.positive_data_acceptance
        acceptance.expected_statuses = [*acceptance.expected_statuses, "422"]
        for_every_case(schema, examples, every_check)
