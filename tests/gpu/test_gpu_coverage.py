"""Every op of the core list has a GPU kernel (float32 unless the op takes another dtype),
and every other op with a CPU kernel either has one or is listed as host-only on purpose,
so a new op without a GPU kernel fails here rather than in a GPU-pinned graph. An op with
no CUDA kernel yet gets its GPU kernel from ``host=True`` on its CPU kernel or reference."""
import pytest

from dtf.framework import op_registry
from dtf.kernels import registry
from dtf.kernels.reference import REFERENCE

pytestmark = pytest.mark.gpu

ELEMENTWISE = """Add Sub Mul RealDiv FloorDiv FloorMod TruncateDiv Pow Neg Abs Sign Square Sqrt Rsqrt
Reciprocal Exp Expm1 Log Log1p Sin Cos Tan Asin Acos Atan Atan2 Sinh Cosh Tanh Erf Sigmoid Maximum
Minimum SquaredDifference Floor Ceil Round DivNoNan Xdivy IsNan IsInf IsFinite Less LessEqual Greater
GreaterEqual Equal NotEqual Select SelectV2 AddN Cast""".split()
REDUCTIONS = "Sum Mean Max Min Prod ArgMax ArgMin MatMul BatchMatMulV2".split()
ARRAY = """Reshape Transpose ConcatV2 Pack Unpack Split SplitV Slice StridedSlice StridedSliceGrad
GatherV2 UnsortedSegmentSum OneHot ExpandDims Squeeze Tile Pad PadV2 MirrorPad MirrorPadGrad Fill
ZerosLike OnesLike Shape Size Rank ReverseV2 BroadcastTo Identity StopGradient Const Placeholder
PlaceholderWithDefault""".split()
NN = """Relu Relu6 LeakyRelu Elu Softplus Softsign ReluGrad Relu6Grad LeakyReluGrad EluGrad SoftplusGrad
SoftsignGrad Softmax LogSoftmax BiasAdd BiasAddGrad L2Loss SoftmaxCrossEntropyWithLogits
SparseSoftmaxCrossEntropyWithLogits Conv2D Conv2DBackpropInput Conv2DBackpropFilter MaxPool
MaxPoolGrad AvgPool AvgPoolGrad RandomUniform RandomStandardNormal TruncatedNormal""".split()
STATE = "VariableV2 Assign AssignAdd AssignSub ApplyGradientDescent ApplyMomentum ApplyAdam".split()
# Ops whose kernel is chosen by another dtype than float32.
OTHER_DTYPE = {"LogicalAnd": "bool", "LogicalOr": "bool", "LogicalNot": "bool", "LogicalXor": "bool",
               "Any": "bool", "All": "bool", "Where": "bool", "Range": "int32", "InTopKV2": "int32",
               "BroadcastGradientArgs": "int32", "ReducedShape": "int32", "InvertPermutation": "int32"}
CORE = {**{op: "float32" for op in ELEMENTWISE + REDUCTIONS + ARRAY + NN + STATE}, **OTHER_DTYPE}

# No GPU kernel on purpose: strings, files, queues and accumulators live in host memory, so
# these run on the task's CPU (TF pins them there too); soft placement moves them.
HOST_ONLY = {
    "SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename", "SelectUninitialized",
    "ScalarSummary", "HistogramSummary", "MergeSummary",
    "ImageSummary", "AudioSummaryV2", "TensorSummaryV2",
    "FIFOQueueV2", "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
    "QueueCloseV2", "QueueSizeV2", "RandomShuffleQueueV2", "QueueDequeueUpToV2",
    "PaddingFIFOQueueV2", "PriorityQueueV2", "CountUpTo",
    "ConditionalAccumulator", "AccumulatorApplyGradient", "AccumulatorNumAccumulated",
    "AccumulatorSetGlobalStep", "AccumulatorTakeGradient", "_AccumulatorWaitReady",
    "SparseConditionalAccumulator", "SparseAccumulatorApplyGradient",
    "SparseAccumulatorTakeGradient",
    "IteratorV2", "OneShotIterator", "IteratorFromStringHandleV2", "MakeIterator",
    "IteratorGetNext", "IteratorToStringHandle",
    "ParseExample", "ParseSingleExample", "ParseSingleSequenceExample", "DecodeRaw",
    "MatchingFiles", "DecodeCSV", "DecodePng", "DecodeJpeg", "DecodeImage", "EncodePng", "EncodeJpeg",
    "StringSplit", "StringSplitV2", "StringToNumber", "StringJoin", "ReduceJoin", "Substr",
    "StringStrip", "StringLength", "RegexReplace",
    "TFRecordReaderV2", "TextLineReaderV2", "WholeFileReaderV2", "FixedLengthRecordReaderV2",
    "IdentityReaderV2", "ReaderReadV2", "ReaderReadUpToV2", "ReaderNumRecordsProducedV2",
    "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2",
}
# Not yet on GPU (docs/control_flow.md): control-flow ops run their bodies on the CPU, and
# TensorArray buffers live in host memory; a GPU-pinned cond or loop needs soft placement.
HOST_ONLY |= {
    "If", "While", "_WhileGrad", "_Arg", "_RefArg",
    "TensorArrayNew", "TensorArrayWrite", "TensorArrayRead", "TensorArrayScatter",
    "TensorArrayWriteGrad", "TensorArrayReadGrad", "TensorArrayScatterGrad",
}


@pytest.mark.parametrize("op", sorted(CORE))
def test_core_op_has_a_gpu_kernel(op):
    assert registry.has_kernel(op, "GPU", CORE[op]), f"{op} has no GPU kernel for {CORE[op]}"


def test_every_op_with_a_cpu_kernel_has_a_gpu_kernel_or_is_host_only():
    op_registry.load_all_ops()
    kernels = registry.registered_kernels("CPU", "GPU")
    cpu = {op for op, dev in kernels if dev == "CPU"} | set(REFERENCE)
    gpu = {op for op, dev in kernels if dev == "GPU"}
    graph_ops = set(op_registry.registered_ops()) | set(REFERENCE)
    missing = sorted((cpu & graph_ops) - gpu - HOST_ONLY)
    assert not missing, f"ops with a CPU kernel but no GPU kernel: {missing}"
    assert not HOST_ONLY & gpu, f"listed as host-only but have a GPU kernel: {sorted(HOST_ONLY & gpu)}"


def test_host_run_ops_run_their_cpu_kernel_on_a_gpu_device():
    # host=True on a reference (Cumsum) or a CPU kernel (VariableV2) makes a GPU fallback
    # that says so, and a CUDA kernel registered for the op would take precedence over it.
    for op, dtype in (("Cumsum", "float32"), ("VariableV2", "float32"), ("Svd", "float64")):
        kdef = registry.lookup(op, "GPU", dtype)
        assert kdef.label == registry.HOST_LABEL and kdef.fallback, (op, kdef)
    assert registry.lookup("MatMul", "GPU", "float32").label != registry.HOST_LABEL
