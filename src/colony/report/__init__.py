"""Self-contained HTML reports: sections of text, tables and matplotlib figures."""

from colony.report.html import Report

__all__ = ["Report"]
