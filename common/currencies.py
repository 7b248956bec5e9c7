"""The ISO 4217 currency codes Wattledger accepts: the one list every input checks a currency against.

Active codes of ISO 4217 list one (SIX, the maintenance agency; 2025), fund codes
included (``CHE``, ``BOV``...), withdrawn codes (``HRK``, ``ZWL``), precious
metals, the SDR and the testing codes (``X...`` other than the currency unions') left out:
money in Wattledger is money someone pays. Pure: no framework, importable from anywhere
above ``fleets``.
"""

from __future__ import annotations

ISO_4217_ACTIVE = frozenset(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD
    CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL
    GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD
    KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO
    NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD
    SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV
    WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG
    """.split()  # noqa: SIM905 - a table, 24 codes a line, reads better than a list of quoted strings
)


def currency_problem(code: str) -> str | None:
    """Why ``code`` is not a currency Wattledger accepts (``None``: it is one): the message each input shows."""
    if code in ISO_4217_ACTIVE:
        return None
    if code.upper() in ISO_4217_ACTIVE:
        return f"{code!r} is not upper case: write {code.upper()}"
    return f"{code!r} is not an active ISO 4217 currency code (e.g. USD, EUR, SEK)"


# The codes in order: the OpenAPI schema's one enum of them (``CurrencyCodeEnum``, config.settings).
CURRENCY_CODES = tuple(sorted(ISO_4217_ACTIVE))
