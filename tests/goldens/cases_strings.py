"""tf.strings basics of input code: split (string_split, strings.split), to_number, join,
reduce_join, substr, strip, length, regex_replace (and their v1 top-level names)."""
import numpy as np

from tests.goldens.harness import case


def _sp(sp, prefix):
    return {f"{prefix}_indices": sp.indices, f"{prefix}_values": sp.values,
            f"{prefix}_shape": sp.dense_shape}


@case
def split(tf):
    lines = tf.constant(["hello world", "a,b,,c", "", "  two  spaces ", "x"])
    return {**_sp(tf.string_split(lines), "space"),
            **_sp(tf.string_split(lines, delimiter=", "), "set"),
            **_sp(tf.string_split(lines, delimiter=",", skip_empty=False), "keep"),
            **_sp(tf.string_split(tf.constant(["abc", "de"]), delimiter=""), "chars"),
            **_sp(tf.strings.split(lines), "v2_ws"),
            **_sp(tf.strings.split(lines, sep=","), "v2_sep"),
            **_sp(tf.strings.split(lines, sep=",", maxsplit=1), "v2_max"),
            **_sp(tf.strings.split(tf.constant(["a<>b<><>c"]), sep="<>"), "v2_multi")}


@case
def to_number(tf):
    s = tf.constant(["1.5", "-2", "3e2", " 7", "0x10"])
    i = tf.constant([["12", "-7"], ["+3", "0"]])

    def run(sess):
        out = sess.run({"f32": tf.string_to_number(s[:3]),
                        "f64": tf.strings.to_number(s[:3], out_type=tf.float64),
                        "i32": tf.string_to_number(i, out_type=tf.int32),
                        "i64": tf.strings.to_number(i, tf.int64)})
        for k, bad, t in (("bad_float", "abc", tf.float32), ("bad_int", "1.5", tf.int32),
                          ("overflow", "99999999999", tf.int32)):
            try:
                sess.run(tf.string_to_number(tf.constant([bad]), out_type=t))
                out[k] = "none"
            except tf.errors.InvalidArgumentError:
                out[k] = "InvalidArgumentError"
        return out
    return run


@case
def join_and_reduce_join(tf):
    a = tf.constant([["a", "b"], ["c", "d"]])
    return {"join": tf.strings.join([a, "-", a], separator="|"),
            "string_join": tf.string_join(["x", tf.constant(["1", "2"])]),
            "all": tf.strings.reduce_join(a), "axis0": tf.strings.reduce_join(a, 0),
            "axis1_sep": tf.reduce_join(a, axis=1, separator=", "),
            "keep": tf.strings.reduce_join(a, -1, keepdims=True),
            "both": tf.reduce_join(a, [0, 1], separator="."),
            "empty": tf.strings.reduce_join(tf.zeros([2, 0], tf.string), 1)}


@case
def substr_strip_length(tf):
    s = tf.constant(["hello", "hi", "abcdef"])
    u = tf.constant(["héllo", "日本"])

    def run(sess):
        out = sess.run({"sub": tf.strings.substr(s, 1, 3), "sub_neg": tf.substr(s, -2, 2),
                        "sub_vec": tf.strings.substr(s, [0, 1, 2], [2, 1, 10]),
                        "strip": tf.strings.strip(tf.constant([" a b ", "\tc\n", ""])),
                        "string_strip": tf.string_strip(tf.constant(["  x"])),
                        "length": tf.strings.length(s), "bytes": tf.strings.length(u),
                        "chars": tf.strings.length(u, unit="UTF8_CHAR")})
        try:
            sess.run(tf.strings.substr(s, 3, 1))
            out["sub_out_of_range"] = "none"
        except tf.errors.InvalidArgumentError:
            out["sub_out_of_range"] = "InvalidArgumentError"
        return out
    return run


@case
def regex_replace(tf):
    s = tf.constant(["Hello  World", "a1b22c333", "no match"])
    return {"global": tf.strings.regex_replace(s, "[0-9]+", "#"),
            "first": tf.regex_replace(s, "[0-9]", "#", replace_global=False),
            "groups": tf.strings.regex_replace(s, r"(\w+)\s+(\w+)", r"\2 \1"),
            "whole": tf.strings.regex_replace(s, "o", r"<\0>"),
            "spaces": tf.strings.regex_replace(s, r"\s+", " ")}
