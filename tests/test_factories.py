"""Each factory's defaults make a row its model's validation accepts, so a test names only what it asserts on."""

from __future__ import annotations

import pytest

from tests.helpers import factories

FACTORIES = [
    getattr(factories, name)
    for name in sorted(dir(factories))
    if name.endswith("Factory") and not getattr(factories, name)._meta.abstract
]


@pytest.mark.django_db
@pytest.mark.parametrize("factory", FACTORIES, ids=lambda factory: factory.__name__)
def test_a_factory_default_passes_its_model_validation(factory) -> None:
    row = factory()
    # A nullable field left empty is what the product stores where it knows nothing (e.g. an unknown NVML field).
    unknown = [field.name for field in row._meta.fields if field.null and getattr(row, field.attname) is None]
    row.full_clean(exclude=unknown)
    assert type(row).objects.filter(pk=row.pk).exists()
