"""nbgrader's per-student bookkeeping made cheaper in a grading worker (used by instructor.py).

Profiled per graded submission (``scripts/bench_grading.py --breakdown``), nbgrader 0.9.6 spends
most of its own CPU on two things that do not depend on the submission:

- it opens the gradebook about eight times per student, and each ``Gradebook(...)`` builds a
  new SQLAlchemy engine and session class, lists the tables and runs ``create_all``;
- it checks each cell's nbgrader metadata with ``jsonschema.validate``, which re-checks the
  schema itself and builds a new validator for every cell, twice per notebook.

``install()`` keeps one engine and session class per database in the worker (the tables are
checked the first time only) and one validator per schema. What is written to the gradebook,
and what is accepted or rejected, is unchanged: each ``Gradebook`` still gets its own session
and still records its course, and a cell that breaks the schema raises the same
``ValidationError``.
"""

from __future__ import annotations

from typing import Any

_ENGINES: dict[str, Any] = {}
_VALIDATORS: dict[int, Any] = {}
_ORIGINALS: dict[str, Any] = {}


def install() -> None:
    """Patch nbgrader in this process (once); plain ``nbgrader`` commands are not affected."""
    from nbgrader import api
    from nbgrader.nbgraderformat import common

    if _ORIGINALS:
        return
    original = _ORIGINALS["init"] = api.Gradebook.__init__
    _ORIGINALS["jsonschema"] = common.jsonschema

    def gradebook_init(
        self: Any, db_url: str, course_id: str = "default_course", authenticator: Any = None
    ) -> None:
        from sqlalchemy.orm import scoped_session, sessionmaker

        if db_url not in _ENGINES:  # the first time: nbgrader's own, which creates missing tables
            original(self, db_url, course_id, authenticator)
            self.db.remove()
            factory = sessionmaker(autoflush=True, bind=self.engine, future=True)
            _ENGINES[db_url] = (self.engine, factory)
        self.engine, factory = _ENGINES[db_url]
        # A session of its own, from one session class (each sessionmaker makes a new class,
        # and SQLAlchemy sets up its event hooks again for each: 40 ms of CPU every time).
        self.db = scoped_session(factory)
        self.check_course(course_id=course_id)
        self.course_id, self.authenticator = course_id, authenticator

    api.Gradebook.__init__ = gradebook_init
    common.jsonschema = _CachedJsonschema()


def uninstall() -> None:
    """Put nbgrader back as it was and drop the kept engines (tests)."""
    from nbgrader import api
    from nbgrader.nbgraderformat import common

    if _ORIGINALS:
        api.Gradebook.__init__ = _ORIGINALS.pop("init")
        common.jsonschema = _ORIGINALS.pop("jsonschema")
    for engine, _ in _ENGINES.values():
        engine.dispose()
    _ENGINES.clear()
    _VALIDATORS.clear()


class _CachedJsonschema:
    """What nbgrader's metadata validator uses of ``jsonschema``: ``validate``, with the
    schema checked and its validator built once."""

    def __getattr__(self, name: str) -> Any:
        import jsonschema

        return getattr(jsonschema, name)

    @staticmethod
    def validate(instance: Any, schema: dict[str, Any]) -> None:
        import jsonschema

        validator = _VALIDATORS.get(id(schema))
        if validator is None:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validator = _VALIDATORS[id(schema)] = (schema, cls(schema))
        error = jsonschema.exceptions.best_match(validator[1].iter_errors(instance))
        if error is not None:
            raise error
