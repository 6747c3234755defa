"""tf.metrics: each metric's update op run over several fixed batches, its value after
them, and the names of the local variables and tensors it made."""
import numpy as np

from tests.goldens.harness import case

BATCHES = 3
BATCH = 8


def _batches(seed, num_classes=4):
    rng = np.random.RandomState(seed)
    return [{"labels": rng.randint(0, num_classes, BATCH),
             "predictions": rng.randint(0, num_classes, BATCH),
             "probs": rng.rand(BATCH).astype(np.float32),
             "weights": rng.randint(0, 4, BATCH).astype(np.float32) / 2}
            for _ in range(BATCHES)]


def _placeholders(tf):
    return {"labels": tf.placeholder(tf.int64, [None], name="labels"),
            "predictions": tf.placeholder(tf.int64, [None], name="predictions"),
            "probs": tf.placeholder(tf.float32, [None], name="probs"),
            "weights": tf.placeholder(tf.float32, [None], name="weights")}


def _stream(tf, metrics, batches, ph, names=True):
    """A run(sess) that feeds each batch to every update op, then reads every value; with
    ``names`` it records the metric tensors' and local variables' names too."""
    local_names = sorted(v.op.name for v in tf.local_variables())
    metric_names = sorted(v.op.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES))

    def run(sess):
        out = {}
        for i, batch in enumerate(batches):
            feed = {ph[k]: v for k, v in batch.items()}
            for k, v in sess.run({k: m[1] for k, m in metrics.items()}, feed).items():
                out[f"{k}/update_{i}"] = v
        for k, v in sess.run({k: m[0] for k, m in metrics.items()}).items():
            out[f"{k}/value"] = v
        if names:
            for k, m in metrics.items():
                out[f"{k}/value_name"] = m[0].name
            out["local_variables"] = local_names
            out["metric_variables"] = metric_names
        return out
    return run


@case
def mean_based_metrics(tf):
    ph = _placeholders(tf)
    labels_f = tf.cast(ph["labels"], tf.float32)
    col = tf.expand_dims
    metrics = {
        "accuracy": tf.metrics.accuracy(ph["labels"], ph["predictions"]),
        "accuracy_weighted": tf.metrics.accuracy(col(ph["labels"], 1), ph["predictions"],
                                                 weights=ph["weights"], name="acc_w"),
        "mean": tf.metrics.mean(ph["probs"]),
        "mean_weighted": tf.metrics.mean(ph["probs"], weights=col(ph["weights"], 1)),
        "mean_tensor": tf.metrics.mean_tensor(tf.reshape(ph["probs"], [2, 4]),
                                              weights=tf.reshape(ph["weights"], [2, 4])),
        "mse": tf.metrics.mean_squared_error(labels_f, ph["probs"] * 4, weights=ph["weights"]),
        "mae": tf.metrics.mean_absolute_error(labels_f, ph["probs"] * 4),
        "rmse": tf.metrics.root_mean_squared_error(labels_f, ph["probs"] * 4),
        "relative": tf.metrics.mean_relative_error(labels_f, ph["probs"] * 4,
                                                   normalizer=labels_f),
        "below": tf.metrics.percentage_below(ph["probs"], 0.4, weights=ph["weights"]),
        "cosine": tf.metrics.mean_cosine_distance(
            tf.nn.l2_normalize(tf.reshape(labels_f + 1, [4, 2]), 1),
            tf.nn.l2_normalize(tf.reshape(ph["probs"], [4, 2]), 1), dim=1),
    }
    run = _stream(tf, metrics, _batches(0), ph)

    def with_update_names(sess):
        out = run(sess)
        out["update_names"] = [metrics[k][1].name for k in sorted(metrics)]
        return out
    return with_update_names


@case
def counts_precision_recall(tf):
    ph = _placeholders(tf)
    labels, preds, w = ph["labels"] % 2, ph["predictions"] % 2, ph["weights"]
    metrics = {
        "tp": tf.metrics.true_positives(labels, preds),
        "fp": tf.metrics.false_positives(labels, preds, weights=w),
        "tn": tf.metrics.true_negatives(labels, preds),
        "fn": tf.metrics.false_negatives(labels, preds, weights=w),
        "precision": tf.metrics.precision(labels, preds),
        "precision_weighted": tf.metrics.precision(labels, preds, weights=w, name="p_w"),
        "recall": tf.metrics.recall(labels, preds, weights=w),
    }
    return _stream(tf, metrics, _batches(1), ph)


@case
def auc_and_thresholds(tf):
    ph = _placeholders(tf)
    labels, probs, w = ph["labels"] % 2, ph["probs"], ph["weights"]
    thresholds = [0.25, 0.5, 0.75]
    metrics = {
        "roc": tf.metrics.auc(labels, probs),
        "roc_weighted_few": tf.metrics.auc(labels, probs, weights=w, num_thresholds=11),
        "pr": tf.metrics.auc(labels, probs, curve="PR", num_thresholds=50),
        "pr_careful": tf.metrics.auc(labels, probs, curve="PR",
                                     summation_method="careful_interpolation"),
        "roc_minoring": tf.metrics.auc(labels, probs, summation_method="minoring",
                                       thresholds=[0.3, 0.6, 0.1]),
        "roc_majoring": tf.metrics.auc(labels, probs, summation_method="majoring"),
        "precision_at": tf.metrics.precision_at_thresholds(labels, probs, thresholds),
        "recall_at": tf.metrics.recall_at_thresholds(labels, probs, thresholds, weights=w),
        "tp_at": tf.metrics.true_positives_at_thresholds(labels, probs, thresholds),
        "fp_at": tf.metrics.false_positives_at_thresholds(labels, probs, thresholds, weights=w),
        "tn_at": tf.metrics.true_negatives_at_thresholds(labels, probs, thresholds),
        "fn_at": tf.metrics.false_negatives_at_thresholds(labels, probs, thresholds),
        "sens_at_spec": tf.metrics.sensitivity_at_specificity(labels, probs, 0.7),
        "sens_at_spec_w": tf.metrics.sensitivity_at_specificity(labels, probs, 0.4, weights=w,
                                                                num_thresholds=20),
        "spec_at_sens": tf.metrics.specificity_at_sensitivity(labels, probs, 0.6),
        "spec_at_sens_w": tf.metrics.specificity_at_sensitivity(labels, probs, 0.3, weights=w,
                                                                num_thresholds=9),
    }
    return _stream(tf, metrics, _batches(2), ph)


@case
def per_class_metrics(tf):
    ph = _placeholders(tf)
    metrics = {
        "iou": tf.metrics.mean_iou(ph["labels"], ph["predictions"], 4),
        "iou_weighted": tf.metrics.mean_iou(ph["labels"], ph["predictions"], 4,
                                            weights=ph["weights"]),
        "per_class": tf.metrics.mean_per_class_accuracy(ph["labels"], ph["predictions"], 4),
        "per_class_weighted": tf.metrics.mean_per_class_accuracy(
            ph["labels"], ph["predictions"], 4, weights=ph["weights"]),
    }
    # Class 3 never appears, so IoU and per-class accuracy leave it out.
    batches = [{k: (np.minimum(v, 2) if k in ("labels", "predictions") else v)
                for k, v in b.items()} for b in _batches(3)]
    return _stream(tf, metrics, batches, ph)


@case
def collections_and_reset(tf):
    ph = _placeholders(tf)
    value, update = tf.metrics.accuracy(ph["labels"], ph["predictions"],
                                        metrics_collections=["my_metrics"],
                                        updates_collections=[tf.GraphKeys.UPDATE_OPS])
    batch = _batches(4)[0]
    feed = {ph[k]: v for k, v in batch.items()}
    facts = {"in_metrics": [t.name for t in tf.get_collection("my_metrics")],
             "in_updates": [t.name for t in tf.get_collection(tf.GraphKeys.UPDATE_OPS)],
             "trainable": [v.name for v in tf.trainable_variables()],
             "global": [v.name for v in tf.global_variables()]}
    reset = tf.local_variables_initializer()

    def run(sess):
        before = sess.run(value)
        sess.run(update, feed)
        after_one = sess.run(value)
        sess.run(reset)
        return {**facts, "before": before, "after_one": after_one,
                "after_reset": sess.run(value)}
    return run


@case
def precision_recall_at_k_sparse_labels(tf):
    """SparseTensor labels: only the values count (rows of different sizes, duplicates and
    a negative id among them), for precision and recall, with class_id and weights."""
    rng = np.random.RandomState(8)
    labels = tf.sparse_placeholder(tf.int64, name="labels")
    scores = tf.placeholder(tf.float32, [None, 5], name="scores")
    weights = tf.placeholder(tf.float32, [None], name="weights")
    ph = {"labels": labels, "scores": scores, "weights": weights}
    batches = []
    for _ in range(BATCHES):
        indices, values = [], []
        for row in range(BATCH):
            cols = np.sort(rng.choice(4, rng.randint(0, 4), replace=False))
            indices += [[row, c] for c in cols]
            values += rng.randint(-1, 6, len(cols)).tolist()
        batches.append({"labels": tf.SparseTensorValue(np.asarray(indices, np.int64).reshape(-1, 2),
                                                       np.asarray(values, np.int64), [BATCH, 4]),
                        "scores": rng.rand(BATCH, 5).astype(np.float32),
                        "weights": rng.randint(0, 3, BATCH).astype(np.float32)})
    idx = tf.nn.top_k(scores, 2)[1]
    metrics = {
        "p_at_2": tf.metrics.precision_at_k(labels, scores, 2),
        "r_at_3": tf.metrics.recall_at_k(labels, scores, 3, weights=weights),
        "p_class": tf.metrics.sparse_precision_at_k(labels, scores, 3, class_id=2),
        "r_class": tf.metrics.recall_at_k(labels, scores, 2, class_id=1),
        "p_top_k": tf.metrics.precision_at_top_k(labels, idx, k=2),
        "r_top_k": tf.metrics.recall_at_top_k(labels, idx, weights=weights),
    }
    return _stream(tf, metrics, batches, ph)


@case
def precision_recall_at_k(tf):
    rng = np.random.RandomState(5)
    ph = {"labels": tf.placeholder(tf.int64, [None], name="labels"),
          "label_sets": tf.placeholder(tf.int64, [None, 3], name="label_sets"),
          "scores": tf.placeholder(tf.float32, [None, 5], name="scores"),
          "weights": tf.placeholder(tf.float32, [None], name="weights")}
    batches = [{"labels": rng.randint(0, 5, BATCH),
                "label_sets": rng.randint(-1, 6, (BATCH, 3)),   # -1 and 5 count as labels
                "scores": rng.rand(BATCH, 5).astype(np.float32),
                "weights": rng.randint(0, 3, BATCH).astype(np.float32)} for _ in range(BATCHES)]
    idx = tf.nn.top_k(ph["scores"], 2)[1]
    metrics = {
        "p_at_1": tf.metrics.precision_at_k(ph["labels"], ph["scores"], 1),
        "r_at_3": tf.metrics.recall_at_k(ph["labels"], ph["scores"], 3, weights=ph["weights"]),
        "p_at_2_sets": tf.metrics.precision_at_k(ph["label_sets"], ph["scores"], 2),
        "r_at_2_sets": tf.metrics.recall_at_k(ph["label_sets"], ph["scores"], 2),
        "p_class": tf.metrics.sparse_precision_at_k(ph["label_sets"], ph["scores"], 3,
                                                    class_id=2),
        "r_class": tf.metrics.recall_at_k(ph["labels"], ph["scores"], 2, class_id=1,
                                          weights=ph["weights"]),
        "p_top_k": tf.metrics.precision_at_top_k(ph["label_sets"], idx, k=2),
        "r_top_k": tf.metrics.recall_at_top_k(ph["labels"], idx),
        "ap_at_3": tf.metrics.average_precision_at_k(ph["label_sets"], ph["scores"], 3),
        "ap_at_1_w": tf.metrics.average_precision_at_k(ph["labels"], ph["scores"], 1,
                                                       weights=ph["weights"]),
        "sparse_ap": tf.metrics.sparse_average_precision_at_k(ph["label_sets"], ph["scores"], 2),
    }
    return _stream(tf, metrics, batches, ph)


@case
def confusion_matrix_counts(tf):
    rng = np.random.RandomState(6)
    labels = rng.randint(0, 4, 10)
    preds = rng.randint(0, 4, 10)
    weights = rng.rand(10).astype(np.float32)
    fed = tf.placeholder(tf.int64, [None])
    return {
        "counts": tf.confusion_matrix(labels, preds),
        "sized": tf.confusion_matrix(labels, preds, num_classes=6, dtype=tf.int64),
        "weighted": tf.math.confusion_matrix(labels, preds, num_classes=4, weights=weights,
                                             dtype=tf.float32),
        "column_predictions": tf.confusion_matrix(labels, preds[:, None], num_classes=4),
        "fed_classes": tf.confusion_matrix(fed, preds),
    }, {fed: labels}
