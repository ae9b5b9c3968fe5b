"""From a run's output files to what a user reads: metrics, intervals, figures, report.md and the page.

Everything here reads output files only, never an engine:

- ``metrics``: the metrics of one run; ``uncertainty``: intervals over replicas and paired tests;
- ``comparison``: the report folder of a comparison or a sweep (tables, report.md);
- ``verdict``: what a comparison found, the block the report opens with; ``shown``: how numbers are shown;
- ``schedule_data``, ``plots``: what the figures show, and the PNG figures;
- ``html_report``, ``html_page``: the offline report page; ``headless``: a browser to check it;
- ``output_check``: a damaged output folder refused in one line before anything is drawn.
"""
