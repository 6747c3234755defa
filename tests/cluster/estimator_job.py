"""One task of a train_and_evaluate job (its role comes from TF_CONFIG): a linear
regression whose variables the RunConfig's device setter puts on the ps task.

Run as ``python estimator_job.py MODEL_DIR MAX_STEPS``; trainers print how many steps
they ran and where the weights lived, the evaluator prints its last metrics."""
import sys

import numpy as np

import dtf as tf

RS = np.random.RandomState(0)
X = RS.randn(256, 3).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)


class CountSteps(tf.train.SessionRunHook):
    count = 0

    def after_run(self, run_context, run_values):
        CountSteps.count += 1


def model_fn(features, labels, mode):
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    if mode == tf.estimator.ModeKeys.TRAIN:
        print("weights on", w.device, flush=True)
    pred = tf.matmul(features["x"], w) + b
    loss = tf.reduce_mean(tf.square(pred - labels))
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir, max_steps):
    config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=10,
                                    experimental_max_worker_delay_secs=0)
    est = tf.estimator.Estimator(model_fn, config=config)
    train_input = tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=32, num_epochs=None,
                                                     shuffle=True)
    eval_input = tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=64, shuffle=False)
    tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(train_input, max_steps=max_steps, hooks=[CountSteps()]),
        tf.estimator.EvalSpec(eval_input, steps=None, start_delay_secs=0, throttle_secs=1))
    if config.task_type == "evaluator":
        print("evaluator done", flush=True)
    else:
        print("steps run", CountSteps.count, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
