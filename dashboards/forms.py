"""The pages' own query parameters, parsed with bounds (the period is ``common.periods``'s).

A page never answers 500 or 400 for a parameter a person edited by hand: a value
that does not parse is dropped and the page shows its default, as for a missing one.
"""

from __future__ import annotations

from django import forms
from django.http import HttpRequest

from reports.sharing import IdleTreatment

MAX_ID = 2**63 - 1


class CurrencyForm(forms.Form):
    currency = forms.RegexField(regex=r"^[A-Z]{3}$", required=False)  # ISO 4217


class CompareForm(forms.Form):
    by = forms.ChoiceField(
        choices=[("fleet", "fleet"), ("gpu_model", "GPU model"), ("llm_model", "GPU model and LLM model")],
        required=False,
    )
    baseline = forms.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    by_load = forms.BooleanField(required=False)
    # Per LLM model, where the node-hours without output tokens go (``reports.sharing``); default apart.
    idle = forms.ChoiceField(
        choices=[(IdleTreatment.APART.value, "idle shown apart"), (IdleTreatment.SHARED.value, "idle shared")],
        required=False,
    )


def page_options(form_class: type[forms.Form], request: HttpRequest) -> dict[str, object]:
    """The form's fields from the query string: each valid value, or ``None`` where it is missing or invalid."""
    form = form_class(request.GET)
    form.is_valid()
    return {name: form.cleaned_data.get(name) or None for name in form.fields}


class ColumnsForm(forms.Form):
    # A table page shows its decisive columns; ``columns=all`` shows every one.
    columns = forms.ChoiceField(choices=[("all", "every column")], required=False)
