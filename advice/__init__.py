"""Placement advice: measured load curves, workload classes, and where (and when) each class should run.

Pure arithmetic (no framework): ``bands`` (load curves from hourly figures),
``advisor`` (which fleets take a class, at what share) and ``windows`` (when a
deferrable class should run). The rest reads and writes through Django.
"""
