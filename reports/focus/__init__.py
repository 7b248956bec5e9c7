"""The FOCUS 1.2 export of the ledger (FinOps Open Cost and Usage Specification): docs/focus.md.

``columns`` and ``charges`` are pure (the mapping, the split of a line into
charges, the day roll-up); ``rows`` reads the ledger; ``api`` serves the CSV.
"""
