"""The demo organization: two fleets (rented H100s, owned and rented RTX 4090s) and their history.

``spec`` says what it holds and where each price comes from; ``inventory`` writes
it; ``tokens`` keeps the live collectors' tokens; ``intensity`` shapes simulated
hourly grid intensity; ``backfill`` sends history through simulated collectors
to a server (``server`` starts a temporary one); ``queues`` drains the rollup
and ledger queues; ``seed`` runs the steps for ``manage.py seed_demo``, with
``progress`` bars; ``summary`` reads the per-fleet figures back from the ledger.
"""
