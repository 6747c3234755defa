"""tf.flags / tf.app.flags: absl-style command-line flags, as TF 1.15 re-exports them.

``FLAGS`` parses ``sys.argv`` the first time a flag is read (TF's wrapper does this, so
programs that read FLAGS at import time work); ``tf.app.run`` parses with ``known_only``
so flags nobody defined stay in the argv handed to ``main``. Parsing follows absl:
``--name=value``, ``--name value``, ``-name``, ``--flag``/``--noflag`` for booleans,
``--`` ends the flags, positional arguments are kept in order.
"""
from __future__ import annotations

import csv
import difflib
import os
import sys
import textwrap

__all__ = [
    "FLAGS", "FlagValues", "Flag", "Error", "DuplicateFlagError", "IllegalFlagValueError",
    "CantOpenFlagFileError",
    "UnrecognizedFlagError", "UnparsedFlagAccessError", "ValidationError",
    "DEFINE_string", "DEFINE_integer", "DEFINE_float", "DEFINE_boolean", "DEFINE_bool",
    "DEFINE_list", "DEFINE_enum", "DEFINE_multi_string", "DEFINE_multi_integer",
    "DEFINE_multi_float", "mark_flag_as_required", "mark_flags_as_required",
    "register_validator", "validator",
]


class Error(Exception):
    """The base class of every flags error."""


class DuplicateFlagError(Error):
    """A flag name defined twice."""


class IllegalFlagValueError(Error):
    """A value the flag's type or bounds refuse."""


class UnrecognizedFlagError(Error):
    """A command-line flag nobody defined (outside ``known_only`` parsing)."""

    def __init__(self, flagname, flagvalue="", suggestions=None):
        self.flagname, self.flagvalue = flagname, flagvalue
        tip = f". Did you mean: {', '.join(suggestions)} ?" if suggestions else ""
        super().__init__(f"Unknown command line flag '{flagname}'{tip}")


class UnparsedFlagAccessError(Error):
    """A flag of a FlagValues read before that FlagValues parsed anything."""


class CantOpenFlagFileError(Error):
    """A --flagfile that cannot be read."""


class ValidationError(Error):
    """A validator's (e.g. mark_flag_as_required's) complaint."""


# -- parsers: str (or a default of the right type) -> value; ValueError/TypeError on junk --
class _StringParser:
    syntactic_help = ""
    boolean = False

    def parse(self, argument):
        if not isinstance(argument, str):
            raise TypeError(f'flag value must be a string, found "{type(argument)}"')
        return argument

    def serialize(self, value):
        return str(value)


class _BooleanParser(_StringParser):
    boolean = True

    def parse(self, argument):
        if isinstance(argument, str):
            lowered = argument.lower()
            if lowered in ("true", "t", "1"):
                return True
            if lowered in ("false", "f", "0"):
                return False
            raise ValueError("Non-boolean argument to boolean flag", argument)
        if isinstance(argument, int) and argument in (0, 1):
            return bool(argument)
        raise ValueError("Non-boolean argument to boolean flag", argument)

    def serialize(self, value):
        return "true" if value else "false"


class _NumericParser(_StringParser):
    article, noun = "a", "number"

    def __init__(self, lower_bound=None, upper_bound=None):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.syntactic_help = self._describe(lower_bound, upper_bound)

    def _describe(self, lo, hi):
        plain = f"{self.article} {self.noun}"
        if lo is not None and hi is not None:
            return f"{plain} in the range [{lo}, {hi}]"
        for bound, value, words in ((lo, 1, "a positive"), (hi, -1, "a negative"),
                                    (lo, 0, "a non-negative"), (hi, 0, "a non-positive")):
            if bound == value and (value != 1 and value != -1 or self.noun == "integer"):
                return f"{words} {self.noun}"
        if hi is not None:
            return f"{self.noun} <= {hi}"
        if lo is not None:
            return f"{self.noun} >= {lo}"
        return plain

    def parse(self, argument):
        value = self.convert(argument)
        if ((self.lower_bound is not None and value < self.lower_bound)
                or (self.upper_bound is not None and value > self.upper_bound)):
            raise ValueError(f"{value} is not {self.syntactic_help}")
        return value


class _FloatParser(_NumericParser):
    def convert(self, argument):
        if isinstance(argument, (int, float, str)) and not isinstance(argument, bool):
            return float(argument)
        raise TypeError(f"Expect argument to be a string, int, or float, found {type(argument)}")


class _IntegerParser(_NumericParser):
    article, noun = "an", "integer"

    def convert(self, argument):
        if isinstance(argument, int) and not isinstance(argument, bool):
            return argument
        if isinstance(argument, str):
            base = 10
            if len(argument) > 2 and argument[0] == "0" and argument[1] in "ox":
                base = 8 if argument[1] == "o" else 16
            return int(argument, base)
        raise TypeError(f"Expect argument to be a string or int, found {type(argument)}")


class _EnumParser(_StringParser):
    def __init__(self, enum_values, case_sensitive=True):
        if not enum_values:
            raise ValueError(f'enum_values cannot be empty, found "{enum_values}"')
        if isinstance(enum_values, str):
            raise ValueError(f'enum_values cannot be a str, found "{enum_values}"')
        self.enum_values, self.case_sensitive = list(enum_values), case_sensitive

    def parse(self, argument):
        for value in self.enum_values:
            if value == argument or (not self.case_sensitive
                                     and value.upper() == str(argument).upper()):
                return value
        raise ValueError(f"value should be one of <{'|'.join(self.enum_values)}>")


class _ListParser(_StringParser):
    syntactic_help = "a comma separated list"

    def parse(self, argument):
        if isinstance(argument, list):
            return argument
        if not argument:
            return []
        try:
            return [s.strip() for s in next(csv.reader([argument], strict=True))]
        except csv.Error as e:
            raise ValueError(f"Unable to parse the value {argument!r} as a comma separated "
                             f"list of strings: {e}") from e

    def serialize(self, value):
        return ",".join(value)


class Flag:
    """One flag: its parser, default, current value and how often the command line set it."""

    multi = False

    def __init__(self, parser, name, default, help_string, short_name=None, module_name=""):
        self.parser, self.name, self.help = parser, name, help_string
        self.short_name, self.module_name = short_name, module_name
        self.boolean = parser.boolean
        self.present = 0
        self.using_default_value = True
        self.default = None if default is None else self._parse(default, default)
        self.value = self.default
        self.validators = []

    def _parse(self, argument, shown):
        try:
            return self.parser.parse(argument)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={shown}: {e}") from None

    def parse(self, argument):
        self.value = self._parse(argument, argument)
        self.present += 1
        self.using_default_value = False

    def unparse(self):
        self.value, self.present, self.using_default_value = self.default, 0, True

    def default_text(self):
        return "" if self.default is None else self.parser.serialize(self.default)


class _MultiFlag(Flag):
    multi = True

    def _parse(self, argument, shown):
        items = argument if isinstance(argument, (list, tuple)) else [argument]
        return [super(_MultiFlag, self)._parse(item, shown) for item in items]

    def parse(self, argument):
        new = self._parse(argument, argument)
        self.value = (self.value + new) if self.present else new
        self.present += len(new)
        self.using_default_value = False

    def default_text(self):
        return str(self.default_unparsed_list())

    def default_unparsed_list(self):
        return [self.parser.serialize(v) for v in (self.default or [])]


class _HelpFlag(Flag):
    """--help/-?/--helpshort (main module's flags) and --helpfull (all): print, exit 1."""

    def __init__(self, name, short_name, full):
        super().__init__(_BooleanParser(), name, False,
                         "show full help" if full else "show this help", short_name, "absl.app")
        self._full = full

    def parse(self, argument):
        if self._parse(argument, argument):
            print_usage(full=self._full)
            if not self._full:
                print()
                print("Try --helpfull to get a list of all flags.")
            sys.exit(1)


def _calling_module():
    """(name, id) of the module that called a DEFINE_*; __main__ is named by sys.argv[0]."""
    frame = sys._getframe(1)
    here = frame.f_globals.get("__name__")
    while frame is not None and frame.f_globals.get("__name__") == here:
        frame = frame.f_back
    if frame is None:
        return here, None
    name = frame.f_globals.get("__name__", "")
    module = sys.modules.get(name)
    if name == "__main__" and sys.argv and sys.argv[0]:
        name = sys.argv[0]
    return name, id(module)


class FlagValues:
    """The registry of defined flags; ``FLAGS.name`` reads a flag's value."""

    def __init__(self, parse_on_access=False):
        # Kept in __dict__ under these names (as absl does) so attribute access stays for
        # flag names; old programs read FLAGS.__flags.
        self.__dict__["__flags"] = {}
        self.__dict__["__flags_parsed"] = False
        self.__dict__["__parse_on_access"] = parse_on_access
        self.__dict__["__defined_by"] = {}

    def _flags(self) -> dict:
        return self.__dict__["__flags"]

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        flag = self._flags().get(name)
        if flag is None:
            raise AttributeError(name)
        if not self.is_parsed():
            if self.__dict__["__parse_on_access"]:
                self(sys.argv)  # TF's FLAGS parses sys.argv on the first read
            elif not flag.present:
                raise UnparsedFlagAccessError(
                    f"Trying to access flag --{name} before flags were parsed.")
        return flag.value

    def __setattr__(self, name, value):
        flag = self._flags().get(name)
        if flag is None:
            raise UnrecognizedFlagError(name, str(value))
        saved = (flag.value, flag.using_default_value)
        flag.value, flag.using_default_value = value, False
        try:
            self._validate(flag)
        except IllegalFlagValueError:  # absl keeps the old value when a validator refuses
            flag.value, flag.using_default_value = saved
            raise

    def __getitem__(self, name) -> Flag:
        return self._flags()[name]

    def __contains__(self, name):
        return name in self._flags()

    def __iter__(self):
        return iter(self._flags())

    def __len__(self):
        return len(self._flags())

    def __dir__(self):
        return sorted(self._flags())

    def __str__(self):
        return self.get_help()

    def register(self, flag: Flag):
        """Adds ``flag``; a name taken by another flag is a DuplicateFlagError."""
        flags = self._flags()
        module = _calling_module()
        defined_by = self.__dict__["__defined_by"]
        if flag.name in flags:
            first = defined_by.get(flag.name)
            # The same module imported a second time (``python -m`` runs a main module
            # that something also imports) defines its flags again: absl lets it.
            if first and first[0] == module[0] and first[1] != module[1]:
                return
            raise DuplicateFlagError(
                f"The flag '{flag.name}' is defined twice. First from {first and first[0]}, "
                f"Second from {module[0]}.  Description from first occurrence: "
                f"{flags[flag.name].help}")
        flag.module_name = flag.module_name or module[0]
        flags[flag.name] = flag
        if flag.short_name:
            flags[flag.short_name] = flag
        defined_by[flag.name] = module

    def is_parsed(self) -> bool:
        return self.__dict__["__flags_parsed"]

    def mark_as_parsed(self):
        self.__dict__["__flags_parsed"] = True

    def unparse_flags(self):
        for flag in set(self._flags().values()):
            flag.unparse()
        self.__dict__["__flags_parsed"] = False

    def flag_values_dict(self) -> dict:
        return {name: flag.value for name, flag in self._flags().items()}

    def set_default(self, name, value):
        flag = self._flags()[name]
        flag.default = flag._parse(value, value)
        if flag.using_default_value:
            flag.value = flag.default

    def __call__(self, argv, known_only=False):
        """Parses ``argv`` (argv[0] is the program); returns argv[0] plus what was not a
        known flag. Unknown flags are an UnrecognizedFlagError unless ``known_only``."""
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        if not argv:
            raise ValueError("argv cannot be an empty list, and must contain the program "
                             "name as the first element.")
        rest, unknown = self._parse_args(expand_flagfiles(list(argv[1:])), known_only)
        if unknown:
            name = unknown[0]
            raise UnrecognizedFlagError(name, suggestions=difflib.get_close_matches(
                name, list(self._flags()), n=3))
        self.mark_as_parsed()
        for flag in set(self._flags().values()):
            self._validate(flag)
        return [argv[0]] + rest

    def _parse_args(self, args, known_only):
        flags = self._flags()
        pending = []  # (flag name or None for a positional argument, the argument), in order
        undefok = set()
        it = iter(args)
        for arg in it:
            if not arg.startswith("-"):
                pending.append((None, arg))
                continue
            if arg == "--":
                if known_only:
                    pending.append((None, arg))
                break
            body = arg[2:] if arg.startswith("--") else arg[1:]
            name, eq, value = body.partition("=")
            if not name:
                pending.append((None, arg))
                continue
            value = value if eq else None

            def value_or_next():
                try:
                    return value if value is not None else next(it)
                except StopIteration:
                    raise Error(f"Missing value for flag {arg}") from None
            if name == "undefok":  # --undefok=a,b: these may appear undefined, silently
                names = {n.strip() for n in value_or_next().split(",")}
                undefok |= names | {"no" + n for n in names}
                continue
            flag = flags.get(name)
            if flag is not None:
                value = "true" if flag.boolean and value is None else value_or_next()
            elif name.startswith("no") and len(name) > 2:
                negated = flags.get(name[2:])
                if negated is not None and negated.boolean:
                    if value is not None:
                        raise ValueError(f"{arg} does not take an argument")
                    flag, value = negated, "false"
            if flag is None:
                pending.append((name, arg))
                continue
            flag.parse(value)
        rest, unknown = [], []
        for name, arg in pending:
            if name is None or (known_only and name not in undefok):
                rest.append(arg)
            elif name not in undefok:
                unknown.append(name)
        rest.extend(it)
        return rest, unknown

    def _validate(self, flag):
        for check, message in flag.validators:
            try:
                ok = check(flag.value)
            except ValidationError as e:
                ok, message = False, str(e)
            if not ok:
                raise IllegalFlagValueError(f"flag --{flag.name}={flag.value}: {message}")

    # -- help text, laid out as absl does ------------------------------------------------
    def get_help(self, main_only=False) -> str:
        by_module: dict[str, list] = {}
        for name, flag in self._flags().items():
            if name == flag.name:
                by_module.setdefault(flag.module_name, []).append(flag)
        main = sys.argv[0] if sys.argv else ""
        modules = [main] if main_only else sorted(by_module, key=lambda m: (m != main, m))
        lines = []
        for module in modules:
            if by_module.get(module):
                lines.append(f"\n{module}:")
                for flag in sorted(by_module[module], key=lambda f: f.name):
                    lines.extend(_flag_help(flag))
        return "\n".join(lines)

    def main_module_help(self) -> str:
        return self.get_help(main_only=True)


def _is_flagfile(arg):
    return arg in ("--flagfile", "-flagfile") or arg.startswith(("--flagfile=", "-flagfile="))


def expand_flagfiles(args, _reading=()):
    """Replaces each --flagfile=PATH (or "--flagfile PATH") by the flags in that file, in
    place, as absl does: one per line, blank lines and # or // comments skipped, nested
    flagfiles expanded, arguments after "--" left alone."""
    out = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if _is_flagfile(arg):
            if "=" in arg:
                path = arg.split("=", 1)[1]
            elif rest:
                path = rest.pop(0)
            else:
                raise IllegalFlagValueError("--flagfile with no argument")
            out.extend(_flagfile_lines(os.path.expanduser(path.strip("'\"")), _reading))
            continue
        out.append(arg)
        if arg == "--":
            out.extend(rest)
            break
        if arg.startswith("-") and "=" not in arg and rest and not rest[0].startswith("-"):
            out.append(rest.pop(0))  # the value of "--name value" is never a flagfile
    return out


def _flagfile_lines(path, reading):
    if not path:
        return []
    if path in reading:
        sys.stderr.write(f"Warning: Hit circular flagfile dependency. Ignoring flagfile: {path}\n")
        return []
    try:
        with open(path) as f:
            lines = [line.strip() for line in f]
    except OSError as e:
        raise CantOpenFlagFileError(f"ERROR:: Unable to open flagfile: {e}") from None
    kept = [line for line in lines if line and not line.startswith(("#", "//"))]
    return expand_flagfiles(kept, reading + (path,))


def _flag_help(flag):
    head = f"-{flag.short_name}," if flag.short_name else ""
    head += f"--[no]{flag.name}:" if flag.boolean else f"--{flag.name}:"
    text = flag.help or ""
    if isinstance(flag.parser, _EnumParser):
        text = f"<{'|'.join(flag.parser.enum_values)}>: {text}"
    if flag.multi:
        text += ";\n    repeat this option to specify a list of values"
    lines = textwrap.wrap(f"{head} {text}", 80, initial_indent="  ", subsequent_indent="    ",
                          replace_whitespace=False)
    if flag.default is not None:
        lines.append(f"    (default: {flag.default_text()!r})")
    if flag.parser.syntactic_help:
        lines.append(f"    ({flag.parser.syntactic_help})")
    return lines


def print_usage(full=False, out=None):
    """Writes the main module's docstring and the flags' help, as absl's usage() does."""
    out = out or sys.stdout
    main = sys.modules.get("__main__")
    doc = getattr(main, "__doc__", None) or f"\nUSAGE: {sys.argv[0]} [flags]\n"
    flags = FLAGS.get_help(main_only=not full)
    out.write(doc)
    if flags:
        out.write("\nflags:\n" + flags)
    out.write("\n")


FLAGS = FlagValues(parse_on_access=True)

# TF 1.x's old keyword names, still accepted by tf.flags with a warning.
_OLD_KEYWORDS = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _define(parser, name, default, help, flag_values, flag_class=Flag, short_name=None,  # noqa: A002
            **unsupported):
    if unsupported:
        raise NotImplementedError(f"flags: argument(s) {sorted(unsupported)} of DEFINE_* are "
                                  "not supported by dtf")
    flag = flag_class(parser, name, default, help, short_name=short_name)
    flag_values.register(flag)
    return flag


def _renamed(kwargs):
    for old, new in _OLD_KEYWORDS.items():
        if old in kwargs:
            kwargs[new] = kwargs.pop(old)
    return kwargs


def DEFINE_string(name=None, default=None, help=None, flag_values=FLAGS, **kwargs):  # noqa: A002,N802
    """A string flag."""
    kw = _renamed(dict(name=name, default=default, help=help, **kwargs))
    return _define(_StringParser(), flag_values=flag_values, **kw)


def DEFINE_boolean(name=None, default=None, help=None, flag_values=FLAGS, **kwargs):  # noqa: A002,N802
    """A boolean flag: ``--name``, ``--noname`` or ``--name=true|false|1|0``."""
    kw = _renamed(dict(name=name, default=default, help=help, **kwargs))
    return _define(_BooleanParser(), flag_values=flag_values, **kw)


DEFINE_bool = DEFINE_boolean


def DEFINE_integer(name=None, default=None, help=None, lower_bound=None, upper_bound=None,  # noqa: A002,N802
                   flag_values=FLAGS, **kwargs):
    """An integer flag, optionally bounded (``0x``/``0o`` prefixes accepted)."""
    kw = _renamed(dict(name=name, default=default, help=help, **kwargs))
    return _define(_IntegerParser(lower_bound, upper_bound), flag_values=flag_values, **kw)


def DEFINE_float(name=None, default=None, help=None, lower_bound=None, upper_bound=None,  # noqa: A002,N802
                 flag_values=FLAGS, **kwargs):
    """A float flag, optionally bounded."""
    kw = _renamed(dict(name=name, default=default, help=help, **kwargs))
    return _define(_FloatParser(lower_bound, upper_bound), flag_values=flag_values, **kw)


def DEFINE_list(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: A002,N802
    """A comma-separated list of strings (csv quoting honoured)."""
    return _define(_ListParser(), name, default, help, flag_values, **kwargs)


def DEFINE_enum(name, default, enum_values, help, flag_values=FLAGS, case_sensitive=True,  # noqa: A002,N802
                **kwargs):
    """A string flag limited to ``enum_values``."""
    return _define(_EnumParser(enum_values, case_sensitive), name, default, help, flag_values,
                   **kwargs)


def DEFINE_multi_string(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: A002,N802
    """A repeatable string flag; its value is the list of every occurrence."""
    return _define(_StringParser(), name, default, help, flag_values, _MultiFlag, **kwargs)


def DEFINE_multi_integer(name, default, help, lower_bound=None, upper_bound=None,  # noqa: A002,N802
                         flag_values=FLAGS, **kwargs):
    """A repeatable integer flag."""
    return _define(_IntegerParser(lower_bound, upper_bound), name, default, help, flag_values,
                   _MultiFlag, **kwargs)


def DEFINE_multi_float(name, default, help, lower_bound=None, upper_bound=None,  # noqa: A002,N802
                       flag_values=FLAGS, **kwargs):
    """A repeatable float flag."""
    return _define(_FloatParser(lower_bound, upper_bound), name, default, help, flag_values,
                   _MultiFlag, **kwargs)


def mark_flag_as_required(flag_name, flag_values=FLAGS):
    """Parsing fails unless ``flag_name`` ends up with a value other than None."""
    flag = flag_values[flag_name]
    if flag.default is not None:
        print(f"WARNING: Flag --{flag_name} has a non-None default value; therefore, "
              "mark_flag_as_required will pass even if flag is not specified in the command "
              "line!", file=sys.stderr)
    flag.validators.append((lambda value: value is not None,
                            f"Flag --{flag_name} must have a value other than None."))


def register_validator(flag_name, checker, message="Flag validation failed",
                       flag_values=FLAGS):
    """Parsing (and setting) ``flag_name`` fails with IllegalFlagValueError unless
    ``checker(value)`` is true; a checker may raise ValidationError with its own message."""
    flag_values[flag_name].validators.append((checker, message))


def validator(flag_name, message="Flag validation failed", flag_values=FLAGS):
    """Decorator form of register_validator."""
    def decorate(checker):
        register_validator(flag_name, checker, message, flag_values)
        return checker
    return decorate


def mark_flags_as_required(flag_names, flag_values=FLAGS):
    """mark_flag_as_required for each name."""
    for name in flag_names:
        mark_flag_as_required(name, flag_values)


def define_help_flags():
    """Adds --help/-?/--helpshort/--helpfull to FLAGS once (tf.app.run does this)."""
    if "help" in FLAGS:
        return
    for flag in (_HelpFlag("help", "?", False), _HelpFlag("helpshort", None, False),
                 _HelpFlag("helpfull", None, True)):
        FLAGS.register(flag)
