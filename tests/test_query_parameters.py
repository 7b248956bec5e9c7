"""Every URL of the URLconf, sent random and hostile query parameters, answers 4xx or 2xx/3xx, never 5xx.

The URLs come from Django's resolvers; path converters are filled with ids of
the user's own objects and with junk, regex routes (the admin's) from their
regex. Run as a signed-in organization admin (session) and as a personal token.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.query import ORGANIZATION_REF
from fleets.models import Role, TokenScope
from fleets.personal_tokens import personal_token_create
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

_CONVERTER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
JUNK_IDS = ["0", "1", "99999999999999999999", "9223372036854775808", "2147483648"]
KEYS = [
    "period", "start", "end", "granularity", "organization", "fleet", "site", "node", "gpu_model", "currency",
    "group_by", "limit", "offset", "by", "baseline", "format", "next", "q", "o", "p", "e", "all", "page",
]  # fmt: skip
HOSTILE = [
    "²", "٣", "9999", "99999999999999999999", "-1", "0", "NaN", "", "a\x00b", "9999-12-31", "0001-01-01",
    "9999-12-31T23:00:00Z", "0001-01-01T00:00:00Z", "2026-11-01T00:00:00+14:00", "csv", "%", "\u202e", "x" * 300,
]  # fmt: skip


def url_routes() -> list[tuple[str, object]]:
    """``(route, pattern)`` for every view of the URLconf, prefixes joined."""

    def walk(patterns, prefix):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, [*prefix, pattern.pattern])
            elif isinstance(pattern, URLPattern):
                yield [*prefix, pattern.pattern]

    return [(" ".join(str(p) for p in parts), parts) for parts in walk(get_resolver().url_patterns, [])]


ROUTES = url_routes()


def path_strategy(parts, ids: list[str]) -> st.SearchStrategy[str]:
    """A path for the pattern chain: converters from real ids and junk, regexes from themselves."""
    pieces = []
    for part in parts:
        if isinstance(part, RoutePattern):
            pieces.append(_route_strategy(str(part), ids))
        elif isinstance(part, RegexPattern):
            regex = part.regex.pattern.lstrip("^").rstrip("$").replace("\\Z", "")
            pieces.append(st.from_regex(f"^{regex}\\Z", fullmatch=True).filter(lambda s: "\n" not in s))
    return st.tuples(*pieces).map(lambda found: "/" + "".join(found))


def _route_strategy(route: str, ids: list[str]) -> st.SearchStrategy[str]:
    literals = _CONVERTER.split(route)[::3]
    converters = [m["converter"] or "str" for m in _CONVERTER.finditer(route)]
    values = [
        st.sampled_from(ids + JUNK_IDS)
        if kind in {"int", "path"}
        else st.text(alphabet=st.characters(min_codepoint=48, max_codepoint=122), min_size=1, max_size=12)
        for kind in converters
    ]

    def joined(found):
        out = literals[0]
        for value, literal in zip(found, literals[1:], strict=True):
            out += quote(value, safe="") + literal
        return out

    return st.tuples(*values).map(joined) if values else st.just(route)


values = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20), st.integers().map(str))
params = st.lists(st.tuples(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), values), max_size=6)


@pytest.fixture
def org_user(db):
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    fleets = two_fleets(organization)
    user = UserFactory(username="acme-admin", is_staff=True)
    MembershipFactory(user=user, organization=organization, role=Role.ADMIN)
    row, token = personal_token_create(user=user, name="ci")
    nodes = [node for fleet in fleets for node in fleet.nodes.all()]
    ids = {str(x) for x in [organization.pk, user.pk, row.pk, *(f.pk for f in fleets), *(n.pk for n in nodes)]}
    ids |= {str(gpu.pk) for node in nodes for gpu in node.gpus.all()}
    return user, token, sorted(ids)


def _answer(client, path: str, query: list[tuple[str, str]], **headers):
    url = f"{path}?{urlencode(query)}" if query else path
    response = client.get(url, headers=headers)
    if response.streaming:  # read to the end, as a WSGI server sends it: only then is its request thread free again
        b"".join(response.streaming_content)
    return response


@st.composite
def requests(draw, ids):
    _route, parts = draw(st.sampled_from(ROUTES))
    return draw(path_strategy(parts, ids)), draw(params)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_url_answers_5xx_to_any_query_as_a_signed_in_user(client, org_user, data):
    user, _token, ids = org_user
    client.force_login(user)
    path, query = data.draw(requests(ids))

    response = _answer(client, path, query)

    assert response.status_code < 500, (path, query, response.status_code)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_url_answers_5xx_to_any_query_with_a_personal_token(client, org_user, data):
    _user, token, ids = org_user
    path, query = data.draw(requests(ids))

    response = _answer(client, path, query, Authorization=f"Bearer {token}")

    assert response.status_code < 500, (path, query, response.status_code)


API_PATHS = ["/api/v1/reports/usage/", "/api/v1/reports/comparison/", "/api/v1/reports/sustainability/"]
API_KEYS = KEYS[:16]  # what the reports read
PAGE_PATHS = ["/finance/", "/sustainability/", "/compare/", "/nodes/"]
PAGE_KEYS = ["period", "start", "end", "granularity"]  # what the pages read


@pytest.fixture
def member_without_data(db):
    """A sweep of thousands of requests: an organization with no data keeps each one quick."""
    user = UserFactory(username="sweeper")
    MembershipFactory(user=user, organization=OrganizationFactory(name="Sweep", slug="sweep"), role=Role.ADMIN)
    return user


@pytest.mark.parametrize("value", HOSTILE)
def test_every_hostile_value_of_every_parameter_of_the_reports_and_pages(client, member_without_data, value):
    client.force_login(member_without_data)
    failures = []
    for paths, keys in ((API_PATHS, API_KEYS), (PAGE_PATHS, PAGE_KEYS)):
        for path in paths:
            for key in keys:
                for query in ([(key, value)], [(key, value), ("period", "2026-11")]):
                    try:
                        status = _answer(client, path, query).status_code
                    except Exception as error:  # noqa: BLE001 - the test client re-raises a view's exception: a 500
                        status = repr(error)[:120]
                    if not isinstance(status, int) or status >= 500:
                        failures.append((path, key, status))
    assert failures == []


def test_the_organization_switcher_refuses_what_is_not_one_of_yours_with_400(client, org_user):
    user, _token, _ids = org_user
    client.force_login(user)
    for value in HOSTILE:
        response = client.post("/organization/", {"organization": value, "next": "/finance/"})
        assert response.status_code == 400, (value, response.status_code)


def _refuses_empty(schema: dict) -> bool:
    """Whether "" breaks a query parameter's ``schema``: not text, or text with a format, choices, length or pattern."""
    if schema.get("type") == "array":
        return _refuses_empty(schema.get("items", {}))
    if schema.get("type") != "string":
        return True
    pattern = schema.get("pattern")
    return bool(
        "format" in schema
        or ("enum" in schema and "" not in schema["enum"])
        or schema.get("minLength", 0) > 0
        or (pattern is not None and not re.search(pattern, ""))
    )


def _optional_query_parameters(schema: dict) -> list[tuple[str, str, dict]]:
    """(path, name, schema) of each optional query parameter of the GET operations without path parameters."""
    return [
        (path, parameter["name"], parameter["schema"])
        for path, methods in schema["paths"].items()
        if "{" not in path and "get" in methods
        for parameter in methods["get"].get("parameters", [])
        if parameter["in"] == "query" and not parameter.get("required")
    ]


@pytest.fixture
def api_schema(db):
    return SchemaGenerator().get_schema(request=None, public=True)


def test_an_empty_query_parameter_the_schema_refuses_is_a_400_naming_it(client_as, api_schema):
    # given: an admin, and each optional parameter whose schema "" breaks (a date, number, choice, id or slug)
    client = client_as(Role.ADMIN)
    scraper = client_as(Role.ADMIN, scope=TokenScope.METRICS)  # /metrics takes a token of scope metrics only
    parameters = [
        (path, name) for path, name, schema in _optional_query_parameters(api_schema) if _refuses_empty(schema)
    ]
    assert len(parameters) > 40
    # when: each is sent empty (?start=), alone
    answers = {
        (path, name): (scraper if path == "/metrics" else client).get(path, {name: ""}) for path, name in parameters
    }
    # then: a 400 that names it, not the answer for the parameter left out
    wrong = {
        key: (a.status_code, a.content[:120])
        for key, a in answers.items()
        if a.status_code != 400 or key[1] not in a.json()
    }
    assert wrong == {}


def test_every_organization_query_parameter_is_an_id_or_slug_by_the_schema_and_by_the_api(client_as, api_schema):
    client = client_as(Role.ADMIN)
    organization = [(p, s) for p, name, s in _optional_query_parameters(api_schema) if name == "organization"]
    assert len(organization) >= 8
    for path, schema in organization:
        text = schema.get("items", schema)
        assert text.get("pattern") == ORGANIZATION_REF, (path, text)
        # a NUL byte is no id or slug: a 400 on the parameter, as the schema says, not a 404 or a database error
        answer = client.get(path, {"organization": "org\x00a"})
        assert answer.status_code == 400 and "organization" in answer.json(), (path, answer.content[:200])


def test_a_regex_parameter_states_its_regex_with_the_spaces_drf_trims(client_as, api_schema):
    parameters = {(p, name): s for p, name, s in _optional_query_parameters(api_schema)}
    pattern = parameters[("/api/v1/reports/usage/", "currency")]["items"]["pattern"]
    client = client_as(Role.ADMIN)

    for value, accepted in ((" USD ", True), ("USD", True), ("usd", False), ("USDX", False)):
        assert bool(re.search(pattern, value)) is accepted, (pattern, value)
        answer = client.get("/api/v1/reports/usage/", {"currency": value, "period": "2026-11"})
        assert (answer.status_code == 200) is accepted, (value, answer.content[:200])
