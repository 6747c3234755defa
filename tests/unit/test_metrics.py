"""tf.metrics beyond the goldens: under MonitoredTrainingSession, with fed shapes of
unknown rank, and the errors for arguments dtf or TF refuse."""
import pytest

import dtf as tf


def test_metrics_accumulate_under_monitored_training_session(tmp_path):
    labels = tf.placeholder(tf.int32, [None])
    preds = tf.placeholder(tf.int32, [None])
    acc, acc_update = tf.metrics.accuracy(labels, preds)
    auc, auc_update = tf.metrics.auc(labels, tf.cast(preds, tf.float32))
    tf.train.get_or_create_global_step()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        sess.run([acc_update, auc_update], {labels: [1, 0, 1, 1], preds: [1, 0, 0, 1]})
        sess.run([acc_update, auc_update], {labels: [0, 0], preds: [1, 0]})
        got_acc, got_auc = sess.run([acc, auc])
    assert got_acc == pytest.approx(4 / 6)
    # Positives score 1,0,1 and negatives 0,1,0: of the 9 pairs 4 are ordered right and 4
    # tie, so AUC = (4 + 4 / 2) / 9.
    assert got_auc == pytest.approx(6 / 9, abs=1e-3)


def test_metric_variables_are_local_and_not_saved():
    tf.metrics.mean(tf.constant([1.0, 2.0]))
    assert [v.op.name for v in tf.local_variables()] == ["mean/total", "mean/count"]
    assert tf.global_variables() == [] and tf.trainable_variables() == []
    assert tf.get_collection(tf.GraphKeys.METRIC_VARIABLES) == tf.local_variables()


def test_unknown_rank_weights_are_fitted_at_run_time():
    values = tf.placeholder(tf.float32, [None])
    weights = tf.placeholder(tf.float32)        # rank unknown until fed
    mean, update = tf.metrics.mean(values, weights=weights)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update, {values: [1.0, 3.0], weights: [[1.0], [3.0]]})   # squeezed
        sess.run(update, {values: [5.0, 7.0], weights: 0.5})              # scalar
        assert sess.run(mean) == pytest.approx((1 + 9 + 2.5 + 3.5) / 5.0)


def test_unknown_rank_predictions_are_squeezed_to_the_labels():
    labels = tf.placeholder(tf.int64, [None])
    preds = tf.placeholder(tf.int64)
    acc, update = tf.metrics.accuracy(labels, preds)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(update, {labels: [1, 2, 3], preds: [[1], [2], [0]]}) == pytest.approx(2 / 3)


def test_mean_iou_rejects_class_ids_out_of_range_at_run_time():
    labels = tf.placeholder(tf.int64, [None])
    _, update = tf.metrics.mean_iou(labels, tf.constant([0, 1], tf.int64), num_classes=2)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update, {labels: [1, 0]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(update, {labels: [2, 0]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(update, {labels: [-1, 0]})


def test_refused_arguments_are_named():
    x = tf.constant([0.5])
    with pytest.raises(ValueError, match="Curve must be either ROC or PR"):
        tf.metrics.auc([1], x, curve="XY")
    with pytest.raises(ValueError, match="Invalid summation_method: bogus"):
        tf.metrics.auc([1], x, summation_method="bogus")
    with pytest.raises(NotImplementedError, match="num_classes"):
        tf.metrics.mean_iou(tf.constant([1]), tf.constant([1]), tf.constant(2))
    with pytest.raises(ValueError, match="weights must have rank 0 or 1"):
        tf.metrics.true_positives(tf.constant([True]), tf.constant([True]),
                                  weights=tf.constant([[[1.0]]]))


def test_confusion_matrix_rejects_ids_out_of_range_at_run_time():
    preds = tf.placeholder(tf.int32, [None])
    cm = tf.confusion_matrix([0, 1, 2], preds, num_classes=3)
    with tf.Session() as sess:
        assert sess.run(cm, {preds: [0, 2, 2]}).tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 1]]
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(cm, {preds: [0, 3, 2]})


def test_at_k_labels_of_unknown_rank_are_expanded_at_run_time():
    labels = tf.placeholder(tf.int64)            # rank unknown until fed
    scores = tf.constant([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]])
    _, update = tf.metrics.precision_at_k(labels, scores, 1)
    _, update_sets = tf.metrics.recall_at_k(labels, scores, 1)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(update, {labels: [1, 2]}) == pytest.approx(0.5)
        assert sess.run(update_sets, {labels: [[1, 2], [0, 0]]}) == pytest.approx(2 / 3)


def test_sparse_labels_count_only_their_values_and_average_precision_refuses_them():
    labels = tf.SparseTensor([[0, 1], [1, 0], [1, 2]], tf.constant([0, 1, 1], tf.int64), [2, 3])
    scores = tf.constant([[0.9, 0.1], [0.2, 0.8]])
    recall, update = tf.metrics.recall_at_k(labels, scores, 1)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        # Row 0's set is {0} (its empty positions are no label 0); row 1's is {1}.
        assert sess.run(update) == pytest.approx(1.0)
    with pytest.raises(NotImplementedError, match="SparseTensor labels"):
        tf.metrics.average_precision_at_k(labels, scores, 1)
