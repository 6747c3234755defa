"""DeviceSpec: an immutable, partially specified device name.

Parses and prints TF's forms: ``/job:ps/replica:0/task:1/device:GPU:0`` and the legacy
``/gpu:0`` / ``/cpu:0``. Nested ``tf.device`` scopes merge field by field.
"""
from __future__ import annotations

_FIELDS = ("job", "replica", "task", "device_type", "device_index")


class DeviceSpec:
    __slots__ = _FIELDS

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        object.__setattr__(self, "job", job)
        object.__setattr__(self, "replica", None if replica is None else int(replica))
        object.__setattr__(self, "task", None if task is None else int(task))
        if device_type is not None:
            device_type = str(device_type).upper() if str(device_type).lower() in ("cpu", "gpu") else device_type
        object.__setattr__(self, "device_type", device_type)
        if device_index is not None and device_index != "*":
            device_index = int(device_index)
        object.__setattr__(self, "device_index", device_index)

    def __setattr__(self, name, value):
        raise AttributeError("DeviceSpec is immutable; use replace() or make_merged_spec()")

    @classmethod
    def from_string(cls, spec: str) -> "DeviceSpec":
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
        """Fields set in ``dev`` override this spec's (TF's merge rule)."""
        fields = {f: getattr(self, f) for f in _FIELDS}
        for f in _FIELDS:
            v = getattr(dev, f)
            if v is not None:
                fields[f] = v
        if dev.device_type is not None and dev.device_index is None:
            fields["device_index"] = None
        return DeviceSpec(**fields)

    def merge_from(self, dev):  # TF1 mutated in place; ours returns the merged spec
        return self.make_merged_spec(dev)

    def parse_from_string(self, spec):
        return self.make_merged_spec(DeviceSpec.from_string(spec))

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return f"DeviceSpec({self.to_string()!r})"

    __str__ = to_string


DeviceSpecV2 = DeviceSpec


def _parse(spec: str) -> dict:
    fields: dict = {}
    if spec is None:
        return fields
    spec = str(spec).strip()
    if not spec:
        return fields
    for part in spec.split("/"):
        if not part:
            continue
        key, _, rest = part.partition(":")
        low = key.lower()
        if low == "job" and rest:
            fields["job"] = rest
        elif low == "replica" and rest:
            fields["replica"] = int(rest)
        elif low == "task" and rest:
            fields["task"] = int(rest)
        elif low == "device" and rest:
            dtype, _, idx = rest.partition(":")
            fields["device_type"] = dtype.upper() if dtype.lower() in ("cpu", "gpu") else dtype
            if idx and idx != "*":
                fields["device_index"] = int(idx)
        elif low in ("cpu", "gpu"):
            fields["device_type"] = low.upper()
            if rest and rest != "*":
                fields["device_index"] = int(rest)
        else:
            raise ValueError(f"Unknown attribute: '{part}' in '{spec}'")
    return fields


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
