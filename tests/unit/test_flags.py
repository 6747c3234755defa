"""tf.app.flags / tf.flags and tf.app.run, as absl parses them for TF 1.15; real programs
run in a subprocess where parsing sys.argv at import time matters."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import dtf as tf
from dtf import flags as dtf_flags

PROGRAM = textwrap.dedent('''
    """A trainer in the classic tutorials' style."""
    import os
    import dtf as tf

    flags = tf.app.flags
    flags.DEFINE_string("data_dir", "/tmp/data", "Where the data is.")
    flags.DEFINE_integer("steps", 10, "How many steps.", lower_bound=0)
    flags.DEFINE_boolean("fake", False, "Use fake data.")
    tf.flags.DEFINE_float("lr", 0.1, "Learning rate.")
    flags.DEFINE_list("hosts", "a,b", "Hosts.")
    flags.DEFINE_enum("mode", "train", ["train", "eval"], "Mode.")
    flags.DEFINE_multi_string("tag", [], "Tags.")
    FLAGS = flags.FLAGS

    if os.environ.get("READ_AT_IMPORT"):
        BATCH = FLAGS.steps * 2    # read before tf.app.run: TF parses sys.argv here
        print("import-time", BATCH, FLAGS.fake)

    def main(argv):
        print("argv", argv[1:])
        print("values", [FLAGS.data_dir, FLAGS.steps, FLAGS.fake, FLAGS.lr, FLAGS.hosts,
                         FLAGS.mode, FLAGS.tag])
        return 3 if FLAGS.mode == "eval" else 0

    if __name__ == "__main__":
        tf.app.run()
''')


def run_program(tmp_path, *args, env=None):
    path = tmp_path / "trainer.py"
    path.write_text(PROGRAM)
    import os
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                          timeout=120, env=full_env)
    return proc.returncode, proc.stdout, proc.stderr


def lines_starting(out, word):
    return [line for line in out.splitlines() if line.startswith(word)]


def test_app_run_parses_known_flags_and_hands_the_rest_to_main(tmp_path):
    rc, out, err = run_program(tmp_path, "--steps=3", "pos1", "--unknown=4", "--data_dir",
                               "/d", "--", "--steps=9")
    assert rc == 0, err
    assert lines_starting(out, "argv") == ["argv ['pos1', '--unknown=4', '--', '--steps=9']"]
    assert lines_starting(out, "values") == [
        "values ['/d', 3, False, 0.1, ['a', 'b'], 'train', []]"]


def test_every_flag_spelling(tmp_path):
    rc, out, err = run_program(tmp_path, "--steps", "0x10", "--fake", "-lr=1e-3",
                               "--hosts=x, y,z", "--mode", "eval", "--tag", "a", "--tag=b")
    assert rc == 3, err   # main's return value is the exit status
    assert lines_starting(out, "values") == [
        "values ['/tmp/data', 16, True, 0.001, ['x', 'y', 'z'], 'eval', ['a', 'b']]"]
    rc, out, err = run_program(tmp_path, "--fake=true", "--nofake")
    assert "False" in lines_starting(out, "values")[0]


def test_flags_read_at_import_time_are_parsed_from_argv(tmp_path):
    rc, out, err = run_program(tmp_path, "--steps=4", "--fake", "extra",
                               env={"READ_AT_IMPORT": "1"})
    assert rc == 0, err
    assert lines_starting(out, "import-time") == ["import-time 8 True"]
    assert lines_starting(out, "argv") == ["argv ['extra']"]


def test_unknown_flag_read_at_import_time_is_refused_as_tf_does(tmp_path):
    rc, out, err = run_program(tmp_path, "--bogus=1", env={"READ_AT_IMPORT": "1"})
    assert rc == 1
    assert "UnrecognizedFlagError: Unknown command line flag 'bogus'" in err


@pytest.mark.parametrize("arg, message", [
    ("--steps=-1", "IllegalFlagValueError: flag --steps=-1: -1 is not a non-negative integer"),
    ("--mode=test", "IllegalFlagValueError: flag --mode=test: value should be one of <train|eval>"),
    ("--fake=yes", "IllegalFlagValueError: flag --fake=yes: ('Non-boolean argument to boolean flag', 'yes')"),
    ("--nofake=1", "ValueError: --nofake=1 does not take an argument"),
    ("--steps", "Error: Missing value for flag --steps"),
])
def test_bad_values_fail_naming_the_flag(tmp_path, arg, message):
    rc, out, err = run_program(tmp_path, arg)
    assert rc == 1
    assert message in err


@pytest.mark.parametrize("arg", ["--help", "-?", "--helpshort"])
def test_help_prints_the_main_modules_flags_and_exits_1(tmp_path, arg):
    rc, out, err = run_program(tmp_path, arg)
    assert rc == 1
    assert out.startswith("A trainer in the classic tutorials' style.\nflags:\n")
    assert "  --steps: How many steps.\n    (default: '10')\n    (a non-negative integer)\n" in out
    assert "  --[no]fake: Use fake data.\n    (default: 'false')\n" in out
    assert "  --mode: <train|eval>: Mode.\n" in out
    assert out.rstrip().endswith("Try --helpfull to get a list of all flags.")
    assert not lines_starting(out, "values")   # main never ran


def test_helpfull_lists_every_module(tmp_path):
    rc, out, err = run_program(tmp_path, "--helpfull")
    assert rc == 1
    assert "--hosts: Hosts." in out and "--[no]helpfull: show full help" in out


def test_a_separate_flag_values_refuses_reads_before_parsing():
    fv = dtf_flags.FlagValues()
    dtf_flags.DEFINE_integer("n", 5, "n.", flag_values=fv)
    with pytest.raises(dtf_flags.UnparsedFlagAccessError,
                       match="Trying to access flag --n before flags were parsed."):
        fv.n
    assert fv(["prog", "--n=7", "rest"]) == ["prog", "rest"]
    assert fv.n == 7 and fv["n"].present == 1 and fv["n"].default == 5
    with pytest.raises(AttributeError):
        fv.missing
    with pytest.raises(dtf_flags.UnrecognizedFlagError):
        fv(["prog", "--nope=1"])
    fv.n = 9
    assert fv.flag_values_dict() == {"n": 9}


def test_definitions_are_checked():
    fv = dtf_flags.FlagValues()
    dtf_flags.DEFINE_string("name", None, "a name.", flag_values=fv)
    with pytest.raises(dtf_flags.DuplicateFlagError, match="The flag 'name' is defined twice"):
        dtf_flags.DEFINE_string("name", "x", "again.", flag_values=fv)
    with pytest.raises(dtf_flags.IllegalFlagValueError, match="flag --k=x"):
        dtf_flags.DEFINE_integer("k", "x", "bad default.", flag_values=fv)
    with pytest.raises(NotImplementedError, match="allow_override"):
        dtf_flags.DEFINE_string("o", "", "o.", flag_values=fv, allow_override=True)
    # TF 1.x's old keyword names still work
    dtf_flags.DEFINE_string(flag_name="old", default_value="v", docstring="old names.",
                            flag_values=fv)
    dtf_flags.mark_flag_as_required("name", flag_values=fv)
    with pytest.raises(dtf_flags.IllegalFlagValueError,
                       match="Flag --name must have a value other than None"):
        fv(["prog"])
    fv(["prog", "--name=z"])
    assert (fv.name, fv.old) == ("z", "v")


def test_tf_flags_is_tf_app_flags():
    assert tf.flags is tf.app.flags
    assert tf.app.flags.FLAGS is tf.flags.FLAGS


def test_log_every_n_and_first_n_count_per_call_site(caplog):
    tf.logging.set_verbosity(tf.logging.INFO)
    with caplog.at_level(tf.logging.INFO, logger="dtf"):
        for i in range(7):
            tf.logging.log_every_n(tf.logging.INFO, "every %d", 3, i)
            tf.logging.log_first_n(tf.logging.WARN, "first %d", 2, i)
        tf.logging.log_if(tf.logging.ERROR, "never", False)
        tf.logging.vlog(tf.logging.INFO, "vlog %s", "x")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["every 0", "first 0", "first 1", "every 3", "every 6", "vlog x"]
    assert tf.logging.get_verbosity() == tf.logging.INFO
    assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR,
            tf.logging.FATAL) == (10, 20, 30, 40, 50)


def test_validators_run_at_parse_and_on_assignment():
    fv = dtf_flags.FlagValues()
    dtf_flags.DEFINE_integer("workers", 2, "workers.", flag_values=fv)
    dtf_flags.register_validator("workers", lambda n: n > 0, "must be positive", flag_values=fv)

    @dtf_flags.validator("workers", flag_values=fv)
    def _even(n):
        if n % 2:
            raise dtf_flags.ValidationError("must be even")
        return True
    with pytest.raises(dtf_flags.IllegalFlagValueError, match="flag --workers=-2: must be positive"):
        fv(["prog", "--workers=-2"])
    with pytest.raises(dtf_flags.IllegalFlagValueError, match="flag --workers=3: must be even"):
        fv(["prog", "--workers=3"])
    fv(["prog", "--workers=4"])
    with pytest.raises(dtf_flags.IllegalFlagValueError, match="must be even"):
        fv.workers = 5
    assert fv.workers == 4


def test_flagfiles_expand_in_place_and_nest(tmp_path):
    inner = tmp_path / "inner.cfg"
    inner.write_text("--rate=0.5\n")
    outer = tmp_path / "outer.cfg"
    outer.write_text(f"# training settings\n--steps=7\n\n// more\n--flagfile={inner}\n--tag=x\n")
    fv = dtf_flags.FlagValues()
    dtf_flags.DEFINE_integer("steps", 1, "steps.", flag_values=fv)
    dtf_flags.DEFINE_float("rate", 0.1, "rate.", flag_values=fv)
    dtf_flags.DEFINE_multi_string("tag", [], "tags.", flag_values=fv)
    rest = fv(["prog", f"--flagfile={outer}", "--steps=9", "--tag", "y", "pos"])
    assert (fv.steps, fv.rate, fv.tag, rest) == (9, 0.5, ["x", "y"], ["prog", "pos"])
    with pytest.raises(dtf_flags.CantOpenFlagFileError, match="Unable to open flagfile"):
        fv(["prog", "--flagfile", str(tmp_path / "missing.cfg")])


def test_undefok_lets_named_flags_be_undefined():
    fv = dtf_flags.FlagValues()
    dtf_flags.DEFINE_integer("n", 1, "n.", flag_values=fv)
    assert fv(["prog", "--old=1", "--n=2", "--noquiet", "--undefok=old,quiet", "x"]) == ["prog", "x"]
    assert fv.n == 2
    assert fv(["prog", "--old=1", "--other", "--undefok", "old"], known_only=True) == ["prog", "--other"]
    with pytest.raises(dtf_flags.UnrecognizedFlagError, match="'other'"):
        fv(["prog", "--old=1", "--other", "--undefok=old"])
