"""A DNNClassifier on CSV data with feature columns, trained by
tf.estimator.train_and_evaluate: a chief and a worker train between-graph with the variables
on the ps task, the evaluator evaluates each new checkpoint.

With a cluster.toml naming the roles (the evaluator serves nothing; see docs/cli.md):

    [jobs]
    chief = ["127.0.0.1:2222"]
    ps = ["127.0.0.1:2223"]
    worker = ["127.0.0.1:2224"]
    evaluator = ["127.0.0.1:2225"]

run it on every role with live steps and eval metrics:

    dtf run --estimator examples/estimator_csv.py -- --model_dir /tmp/income_model

Without TF_CONFIG (``python examples/estimator_csv.py``) it trains and evaluates locally.

The data is a synthetic census-like table (age, hours per week, education, occupation ->
income over 50K), written as CSV files into --data_dir and read back through tf.data
(TextLineDataset + decode_csv), the usual TF 1.x input pipeline for CSV.
"""
import argparse
import os

import numpy as np

import dtf as tf

COLUMNS = ["age", "hours", "education", "occupation", "label"]
DEFAULTS = [[0.0], [0.0], [""], [""], [0]]
EDUCATION = ["school", "college", "bachelors", "masters", "doctorate"]
OCCUPATIONS = ["clerk", "sales", "engineer", "teacher", "nurse", "driver", "chef", "lawyer"]


def write_csv(path, n, seed):
    """Deterministic rows; written to a temporary name and renamed, so replicas writing the
    same file at once never read half of one."""
    if os.path.exists(path):
        return
    rng = np.random.RandomState(seed)
    age = rng.randint(18, 70, n)
    hours = rng.randint(10, 70, n)
    edu = rng.randint(0, len(EDUCATION), n)
    occ = rng.randint(0, len(OCCUPATIONS), n)
    score = 0.04 * (age - 40) + 0.05 * (hours - 40) + 0.8 * (edu - 2) + 0.6 * (occ == 2) \
        + 0.6 * (occ == 7) + rng.randn(n) * 0.5
    label = (score > 0.3).astype(int)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for row in zip(age, hours, edu, occ, label):
            f.write(f"{row[0]},{row[1]},{EDUCATION[row[2]]},{OCCUPATIONS[row[3]]},{row[4]}\n")
    os.replace(tmp, path)


def input_fn(path, batch_size, epochs, shuffle):
    def parse(line):
        fields = tf.decode_csv(line, record_defaults=DEFAULTS)
        features = dict(zip(COLUMNS, fields))
        return features, features.pop("label")

    def fn():
        ds = tf.data.TextLineDataset(path).skip(1).map(parse)
        if shuffle:
            ds = ds.shuffle(1000)
        return ds.repeat(epochs).batch(batch_size)
    return fn


def feature_columns():
    fc = tf.feature_column
    age = fc.numeric_column("age", normalizer_fn=lambda x: (x - 40.0) / 15.0)
    hours = fc.numeric_column("hours", normalizer_fn=lambda x: (x - 40.0) / 15.0)
    education = fc.categorical_column_with_vocabulary_list("education", EDUCATION)
    occupation = fc.categorical_column_with_hash_bucket("occupation", 20)
    age_buckets = fc.bucketized_column(fc.numeric_column("age"), [25.0, 35.0, 45.0, 55.0])
    return [age, hours, fc.indicator_column(education), fc.embedding_column(occupation, 4),
            fc.indicator_column(fc.crossed_column([age_buckets, "education"], 50))]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model_dir", default="/tmp/income_model")
    p.add_argument("--data_dir", default=None, help="Where the CSV files go (default: "
                   "<model_dir>_data).")
    p.add_argument("--max_steps", type=int, default=600)
    p.add_argument("--batch_size", type=int, default=64)
    args = p.parse_args()
    data_dir = args.data_dir or args.model_dir.rstrip("/") + "_data"
    os.makedirs(data_dir, exist_ok=True)
    train_csv, eval_csv = os.path.join(data_dir, "train.csv"), os.path.join(data_dir, "eval.csv")
    write_csv(train_csv, 4000, seed=1)
    write_csv(eval_csv, 1000, seed=2)

    config = tf.estimator.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=100,
                                    log_step_count_steps=100)
    classifier = tf.estimator.DNNClassifier(
        hidden_units=[16, 8], feature_columns=feature_columns(), config=config,
        optimizer=tf.train.AdagradOptimizer(0.1))
    train_spec = tf.estimator.TrainSpec(input_fn(train_csv, args.batch_size, None, True),
                                        max_steps=args.max_steps)
    eval_spec = tf.estimator.EvalSpec(input_fn(eval_csv, 200, 1, False), steps=None,
                                      start_delay_secs=2, throttle_secs=3)
    result = tf.estimator.train_and_evaluate(classifier, train_spec, eval_spec)
    if result:   # locally; on a cluster the evaluator reports each evaluation to `dtf run`
        metrics = result[0]
        print(f"final eval at step {metrics['global_step']}: accuracy "
              f"{metrics['accuracy']:.3f}, auc {metrics['auc']:.3f}, loss {metrics['loss']:.3f}",
              flush=True)
    elif config.task_type == "evaluator":
        print(f"evaluator done; metrics in {classifier.eval_dir()}", flush=True)

if __name__ == "__main__":
    main()
