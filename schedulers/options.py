"""Validation of a scheduler's pybatsim ``-o`` JSON options.

Each scheduler declares its options once (batio's policies, class by class:
their base class parses those of the whole class hierarchy at once)::

    OPTIONS = {
        "backfill_max": Option(int, math.inf, minimum=0,
                               aliases={None: math.inf, "inf": math.inf},
                               help="reservations per round; null or \"inf\": unbounded"),
        "order": Option(str, "fcfs", choices=("fcfs", "sjf", "ljf")),
    }
    settings = parse_options("Backfill", OPTIONS, options)

and a typo, a wrong type or an out-of-range value stops the run at start-up
with a message naming the scheduler, the key, the value and what is allowed,
instead of silently running with a default.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import json
from typing import Any, ClassVar, TypedDict

from batio.errors import InvalidValue


class OptionError(InvalidValue):
    """An option the scheduler does not accept."""


_REJECTED = object()


@dataclass(frozen=True)
class Option:
    """One option: its type, its default, and what values are allowed."""

    kind: type[Any]
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple | None = None
    aliases: Mapping[Any, Any] = field(default_factory=dict)
    """Spellings accepted as is and translated, e.g. ``{"inf": math.inf}``."""
    help: str = ""
    """What the option means (``batio describe`` prints it)."""
    unit: str = ""
    """The unit of a number, e.g. ``"GiB/s"``, ``"bytes/s"``, ``"s"``."""

    def allowed(self, with_help: bool = True) -> str:
        """What the option accepts, in words (and what it means, ``with_help``)."""
        if self.choices is not None:
            text = "one of " + ", ".join(as_json(choice) for choice in self.choices)
        else:
            text = {int: "an integer", float: "a number", bool: "true or false",
                    str: "a string"}.get(self.kind, self.kind.__name__)
            bounds = [f"{sign} {bound}" for sign, bound in ((">=", self.minimum), ("<=", self.maximum))
                      if bound is not None]
            if bounds:
                text += " " + " and ".join(bounds)
        if self.aliases:
            text += ", or " + " or ".join(as_json(alias) for alias in self.aliases)
        if self.unit:
            text += f" {self.unit}"
        return text + (f" ({self.help})" if self.help and with_help else "")

    def convert(self, value: Any) -> Any:
        """The value to use, or ``_REJECTED`` when ``value`` is not allowed."""
        if _hashable(value) and value in self.aliases:
            return self.aliases[value]
        # JSON has one number type and bool is an int in Python: an integer
        # is a valid float, a boolean is never a number.
        if isinstance(value, bool) and self.kind is not bool:
            return _REJECTED
        if self.kind is float and isinstance(value, int):
            value = float(value)
        if not isinstance(value, self.kind) or value != value:  # NaN compares unequal
            return _REJECTED
        if self.choices is not None and value not in self.choices:
            return _REJECTED
        if self.minimum is not None and value < self.minimum:
            return _REJECTED
        if self.maximum is not None and value > self.maximum:
            return _REJECTED
        return value


def parse_options(scheduler: str, spec: Mapping[str, Option],
                  given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every declared option's value: the given one when allowed, else its default.

    Raises ``OptionError`` on an unknown key or a value that is not allowed.
    """
    given = dict(given or {})
    unknown = sorted(set(given) - set(spec))
    if unknown:
        key = unknown[0]
        raise OptionError(f"{scheduler}: unknown option {key!r} = {as_json(given[key])}; "
                          f"known options: {', '.join(sorted(spec))}")
    settings = {}
    for key, option in spec.items():
        if key not in given:
            settings[key] = option.default
            continue
        value = option.convert(given[key])
        if value is _REJECTED:
            raise OptionError(f"{scheduler}: option {key!r} = {as_json(given[key])} "
                              f"is not allowed: expected {option.allowed()}")
        settings[key] = value
    return settings


def as_json(value: Any) -> str:
    """``value`` as it would be written in the JSON options."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class Requirements(TypedDict, total=False):
    """What a policy needs of its inputs (``Declared.REQUIRES``); the meaning
    of each key: ``batio.requirements.REQUIREMENT_KEYS``."""

    storage: bool
    io: bool
    storage_property: tuple[str, ...]
    host_properties: tuple[str, ...]
    job_fields: tuple[str, ...]
    single_host_jobs: bool
    options: tuple[str, ...]


class Declared:
    """What a policy says of itself, read by ``batio.requirements`` and ``batio describe``
    before anything runs: a scheduler class lists its paper, needs and options
    here (``QueueScheduler`` and ``Replay`` inherit it)."""

    PAPER: ClassVar[str] = ""
    """The paper and section the policy implements (``batio describe``)."""
    REQUIRES: ClassVar[Requirements] = {}
    """What the policy needs of its inputs to do what its paper describes,
    rather than fail or quietly behave as a baseline (keys and their meaning:
    ``batio.requirements.REQUIREMENT_KEYS``); ``batio run``, ``compare``, ``sweep``
    and ``matrix`` refuse an input that lacks one (``batio.requirements``)."""
    PERFORMS: ClassVar[tuple[str, ...]] = ()
    """Job fields that stand for work the policy carries out itself (the
    locality policies load each job's ``file``): any other policy would run
    such jobs without that work, so their inputs fit only the performers."""
    OPTIONS: ClassVar[dict[str, Option]] = {}
    """The options this class adds to its bases' (pybatsim ``-o`` JSON)."""
    WITHDRAWN_OPTIONS: ClassVar[tuple[str, ...]] = ()
    """Options of a base class that this policy does not take: they keep
    their default, and the policy sets what they stand for itself."""

    @classmethod
    def declared_options(cls) -> dict[str, Option]:
        """The options of the class and its bases, a class's declaration of
        a key replacing its base's."""
        spec: dict[str, Option] = {}
        for klass in reversed(cls.__mro__):
            spec.update(vars(klass).get("OPTIONS", {}))
        return spec

    @classmethod
    def parse_settings(cls, options: Mapping | None) -> dict[str, Any]:
        """Every option's value (withdrawn ones at their default); OptionError on a bad one."""
        spec = cls.declared_options()
        taken = {key: option for key, option in spec.items() if key not in cls.WITHDRAWN_OPTIONS}
        return {**{key: spec[key].default for key in cls.WITHDRAWN_OPTIONS},
                **parse_options(cls.__name__, taken, options)}

    @classmethod
    def requirements(cls, settings: Mapping[str, Any]) -> Requirements:
        """``REQUIRES`` for these settings (a policy whose needs depend on an option overrides it)."""
        return cls.REQUIRES.copy()
