"""DeviceSpec: an immutable, partially specified device name.

Parses and prints TF's forms: ``/job:ps/replica:0/task:1/device:GPU:0`` and the legacy
``/gpu:0`` / ``/cpu:0``. Nested ``tf.device`` scopes merge field by field.
"""
from __future__ import annotations

import functools

_FIELDS = ("job", "replica", "task", "device_type", "device_index")
# Names accepted in the legacy short form "/cpu:0", "/GPU:1" (any case).
_LEGACY_DEVICE_TYPES = ("CPU", "GPU", "TPU")


def _as_int_or_none(value):
    return None if value is None or value == "*" else int(value)


def _as_device_type(device_type):
    # Only the lowercase spellings of cpu and gpu are upper-cased, as TF does.
    if device_type in ("cpu", "gpu"):
        return device_type.upper()
    return None if device_type is None else str(device_type)


class DeviceSpec:
    __slots__ = _FIELDS

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        object.__setattr__(self, "job", None if job is None else str(job))
        object.__setattr__(self, "replica", _as_int_or_none(replica))
        object.__setattr__(self, "task", _as_int_or_none(task))
        object.__setattr__(self, "device_type", _as_device_type(device_type))
        object.__setattr__(self, "device_index", _as_int_or_none(device_index))

    def __setattr__(self, name, value):
        raise AttributeError("DeviceSpec is immutable; use replace() or make_merged_spec()")

    @classmethod
    def from_string(cls, spec: str) -> "DeviceSpec":
        if cls is DeviceSpec:
            return _from_string_cached(spec)
        return cls(**_parse(spec))

    def to_string(self) -> str:
        out = []
        if self.job is not None:
            out.append(f"/job:{self.job}")
        if self.replica is not None:
            out.append(f"/replica:{self.replica}")
        if self.task is not None:
            out.append(f"/task:{self.task}")
        if self.device_type is not None:
            idx = "*" if self.device_index is None else self.device_index
            out.append(f"/device:{self.device_type}:{idx}")
        return "".join(out)

    def replace(self, **kwargs) -> "DeviceSpec":
        fields = {f: getattr(self, f) for f in _FIELDS}
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def make_merged_spec(self, dev: "DeviceSpec") -> "DeviceSpec":
        """Fields set in ``dev`` override this spec's, each on its own (TF's merge rule)."""
        fields = {}
        for f in _FIELDS:
            v = getattr(dev, f)
            fields[f] = getattr(self, f) if v is None else v
        return DeviceSpec(**fields)

    def merge_from(self, dev):  # TF1 mutated in place; ours returns the merged spec
        return self.make_merged_spec(dev)

    def parse_from_string(self, spec):  # TF1 overwrote every field from ``spec``
        return DeviceSpec.from_string(spec)

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return f"DeviceSpec({self.to_string()!r})"

    __str__ = to_string


DeviceSpecV2 = DeviceSpec


@functools.lru_cache(maxsize=4096)
def _from_string_cached(spec) -> DeviceSpec:
    # Every op in a device scope parses the same few strings; specs are immutable,
    # so one instance per string can be shared.
    return DeviceSpec(**_parse(spec))


def _parse(spec: str) -> dict:
    """TF's grammar: ``job:``, ``replica:``, ``task:``, ``device:TYPE:INDEX`` or the
    legacy ``TYPE[:INDEX]``; keys are case-sensitive, empty parts are skipped."""
    fields: dict = {}
    for part in str(spec or "").strip().split("/"):
        if not part:
            continue
        y = part.split(":")
        if len(y) == 2 and y[0] in ("job", "replica", "task"):
            fields[y[0]] = y[1]
        elif len(y) in (1, 2) and y[0].upper() in _LEGACY_DEVICE_TYPES:
            _set_device(fields, spec, y[0].upper(), y[1] if len(y) == 2 else "*")
        elif len(y) == 3 and y[0] == "device":
            _set_device(fields, spec, y[1], y[2])
        else:
            raise ValueError(f"Unknown attribute: '{y[0]}' in '{spec}'")
    return fields


def _set_device(fields: dict, spec: str, device_type: str, index: str) -> None:
    if "device_type" in fields:
        raise ValueError(f"Cannot specify multiple device types: {spec}")
    if index != "*" and not index.isdigit():
        raise ValueError(f"invalid literal for int: {spec}")
    fields["device_type"] = device_type
    fields["device_index"] = index


def canonical(spec) -> str:
    """Normalises a device string ('' stays '')."""
    if isinstance(spec, DeviceSpec):
        return spec.to_string()
    return DeviceSpec.from_string(spec or "").to_string()


def merge_device(outer: str, inner) -> str:
    """The string ``op.device`` shows for ``inner`` nested inside ``outer``."""
    base = DeviceSpec.from_string(outer or "")
    dev = inner if isinstance(inner, DeviceSpec) else DeviceSpec.from_string(inner or "")
    return base.make_merged_spec(dev).to_string()
