"""What every collection adapter shares: the :class:`Audit` bundle and the :class:`DatasetInfo` card."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from depthlab import schema
from depthlab._checks import parameter_error
from depthlab.catalog import CURATION

if TYPE_CHECKING:  # pragma: no cover
    from depthlab.io import Rejected


@dataclass(frozen=True)
class DatasetInfo:
    """One collection's card: what it is and, above all, what its labels mean.

    Attributes
    ----------
    name : str
        Registry name (``load_dataset(name, root)``).
    description : str
        One line.
    difficulty_source : str
        What the ``difficulty`` column of this collection's tasks table is: ``"human"`` (author rating),
        ``"generated"`` (written at generation time by an LLM or a default) or ``"none"`` (no label).
    human_labels, generated_labels, empirical_labels : str
        Which fields are human ratings, which are generation-time labels, which come from runs.
    missing : str
        What the public release lacks (e.g. capped runs, reference solutions).
    layout : str
        The layout :func:`depthlab.load_dataset` expects under ``root``.
    """

    name: str
    description: str
    difficulty_source: str
    human_labels: str
    generated_labels: str
    empirical_labels: str
    missing: str
    layout: str

    @property
    def curation(self) -> str | None:
        """``"human"`` (tasks written and reviewed by people) or ``"synthetic"`` (LLM-generated).

        Read from :data:`depthlab.catalog.CURATION`, where the fact is written once.
        """
        return CURATION.get(self.name)

    def row(self) -> dict[str, str | None]:
        fields = {key: getattr(self, key) for key in self.__dataclass_fields__}
        return {
            "name": fields.pop("name"),
            "description": fields.pop("description"),
            "curation": self.curation,
        } | fields


@dataclass(frozen=True)
class Audit:
    """One collection loaded for the audit: tasks, capped trials (for D) and public trials (for N, pass rates).

    Attributes
    ----------
    name : str
        The dataset name every row is tagged with (several names joined by ``+`` after :meth:`concat`).
    tasks : pl.DataFrame
        ``schema.TASKS``: W and labels, with ``difficulty_source`` stated by the adapter.
    capped : pl.DataFrame
        ``schema.TRIALS`` rows with a stated turn cap (``cap`` not null): the input of ``estimate_depth``.
    public : pl.DataFrame
        ``schema.TRIALS`` rows without a stated cap (leaderboard / solve runs): the input of N and pass rates.
    rejected : list of Rejected
        Files the loaders could not read, each with its path and reason.
    notes : list of str
        Plain statements of what is missing or how labels must be read, e.g.
        ``"no capped runs: D cannot be estimated"``.

    Examples
    --------
    >>> from depthlab.datasets import Audit
    >>> a = Audit.empty("mine", notes=["nothing loaded"])
    >>> a.tasks.height, a.trials.height, a.notes
    (0, 0, ['nothing loaded'])
    """

    name: str
    tasks: pl.DataFrame
    capped: pl.DataFrame
    public: pl.DataFrame
    rejected: list[Rejected] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def trials(self) -> pl.DataFrame:
        """Capped and public trials in one ``schema.TRIALS`` frame (what ``audit_table`` takes)."""
        return pl.concat([self.capped, self.public], how="vertical")

    def summary(self) -> str:
        """One line: counts of tasks, capped and public trials, rejected files."""
        return (
            f"{self.name}: {self.tasks.height} tasks, {self.capped.height} capped trials, "
            f"{self.public.height} public trials, {len(self.rejected)} rejected files"
        )

    @classmethod
    def empty(cls, name: str, *, notes: Sequence[str] = ()) -> Audit:
        """An Audit with empty tables (the columns are still the schema's)."""
        return cls(name, schema.empty("tasks"), schema.empty("trials"), schema.empty("trials"), [], list(notes))

    @classmethod
    def concat(cls, audits: Sequence[Audit], *, name: str | None = None) -> Audit:
        """Pool several collections into one Audit; rows keep their own ``dataset`` tag.

        Parameters
        ----------
        audits : sequence of Audit
            At least one.
        name : str, optional
            Name of the pooled bundle; default the names joined by ``+``.

        Examples
        --------
        >>> from depthlab.datasets import Audit
        >>> Audit.concat([Audit.empty("a"), Audit.empty("b")]).name
        'a+b'
        """
        audits = list(audits)
        if not audits or not all(isinstance(a, Audit) for a in audits):
            raise parameter_error("audits", "Audit.concat", "a non-empty sequence of Audit", audits)
        return cls(
            name=name if name is not None else "+".join(a.name for a in audits),
            tasks=pl.concat([a.tasks for a in audits], how="vertical"),
            capped=pl.concat([a.capped for a in audits], how="vertical"),
            public=pl.concat([a.public for a in audits], how="vertical"),
            rejected=[r for a in audits for r in a.rejected],
            notes=[f"{a.name}: {note}" for a in audits for note in a.notes],
        )


def make_audit(
    name: str,
    tasks: pl.DataFrame,
    trials: pl.DataFrame,
    *,
    rejected: Sequence[Any] = (),
    notes: Sequence[str] = (),
) -> Audit:
    """Tag every row with ``name``, split trials by stated cap, check the schemas and add the standard notes."""
    tasks = schema.conform(tasks.with_columns(dataset=pl.lit(name, pl.String)), "tasks")
    trials = schema.conform(trials.with_columns(dataset=pl.lit(name, pl.String)), "trials")
    schema.check(tasks, "tasks")
    schema.check(trials, "trials")
    capped = trials.filter(pl.col("cap").is_not_null())
    public = trials.filter(pl.col("cap").is_null())
    return Audit(name, tasks, capped, public, list(rejected), [*notes, *_standard_notes(tasks, capped, public)])


def _standard_notes(tasks: pl.DataFrame, capped: pl.DataFrame, public: pl.DataFrame) -> list[str]:
    notes: list[str] = []
    if tasks.is_empty():
        notes.append("no task files: W and labels are missing")
    else:
        no_work = tasks.filter(pl.col("work").is_null()).height
        if no_work:
            notes.append(f"{no_work} of {tasks.height} tasks have no reference solution: W is null (see work_note)")
    if capped.is_empty():
        notes.append("no capped runs: D cannot be estimated")
    if public.is_empty():
        notes.append("no uncapped (public) runs: N and public pass rates cannot be computed")
    return notes


def json_object(values: dict[str, Any]) -> str | None:
    """A JSON object string of the non-null values (sorted keys), or None when there are none."""
    import msgspec

    kept = {key: value for key, value in values.items() if value is not None and value != "" and value != []}
    return msgspec.json.encode(kept, order="sorted").decode() if kept else None


def keep_time_estimates_as_labels(tasks: pl.DataFrame) -> pl.DataFrame:
    """Move expert/junior time estimates of a collection without human ratings into ``labels``.

    ``expert_time_min`` / ``junior_time_min`` hold human estimates only (TB2's authors); an LLM's estimate
    stays available in ``labels`` but cannot be mistaken for one.
    """
    import msgspec

    if tasks.is_empty():
        return tasks

    def merged(row: dict[str, Any]) -> str | None:
        labels = msgspec.json.decode(row["labels"]) if row["labels"] else {}
        labels.setdefault("expert_time_estimate_min", row["expert_time_min"])
        labels.setdefault("junior_time_estimate_min", row["junior_time_min"])
        return json_object(labels)

    return tasks.with_columns(
        labels=pl.struct("labels", "expert_time_min", "junior_time_min").map_elements(merged, return_dtype=pl.String),
        expert_time_min=pl.lit(None, pl.Float64),
        junior_time_min=pl.lit(None, pl.Float64),
    )
