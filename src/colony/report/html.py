"""A small HTML report writer; figures are PNG files next to index.html."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")


class Report:
    def __init__(self, directory: str | Path, title: str = "Colony report") -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.title = title
        self._parts: list[str] = []

    def section(self, title: str, text: str = "") -> None:
        self._parts.append(f"<h2>{html.escape(title)}</h2>")
        if text:
            self._parts.append(f"<p>{html.escape(text)}</p>")

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        def cell(v):
            return f"{v:,.3g}" if isinstance(v, float) else html.escape(str(v))
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
        self._parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def figure(self, fig, name: str, caption: str = "") -> Path:
        """Save a matplotlib figure as PNG beside the report and reference it."""
        path = self.dir / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        import matplotlib.pyplot as plt
        plt.close(fig)
        self.image(path, caption)
        return path

    def image(self, path: str | Path, caption: str = "") -> None:
        rel = Path(path).name if Path(path).parent == self.dir else str(path)
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self._parts.append(f'<figure><img src="{html.escape(rel)}" alt="{html.escape(caption)}">{cap}</figure>')

    def write(self) -> Path:
        style = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
                 "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
                 "text-align:right}th{background:#f4f4f4}img{max-width:100%}")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
               f"<style>{style}</style></head><body><h1>{html.escape(self.title)}</h1>"
               f"<p>generated {stamp}</p>{''.join(self._parts)}</body></html>")
        path = self.dir / "index.html"
        path.write_text(doc)
        return path
