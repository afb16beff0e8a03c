"""kbert.export.onnx: token_ids.onnx of every kind of model, run in onnxruntime against the Keras model, its int8
variant, apps/export.py --format onnx, what it refuses, and why no string-in model ships."""

import json
import re

import keras
import numpy as np
import pytest

from kbert.export import ExportError, ExportSpec, load_exportable
from kbert.tasks import BertClassifier, BertQuestionAnswerer, BertTokenClassifier
from tests.conftest import app_module
from tests.export.conftest import NER_TAGS, TENSORFLOW_ONLY, TEXTS, numpy_mean_pool, tiny_backbone

pytestmark = TENSORFLOW_ONLY
onnxruntime = pytest.importorskip("onnxruntime")
pytest.importorskip("tf2onnx")

from kbert.export.onnx import QUANTIZATIONS, export_onnx, int64_inputs, session  # noqa: E402 (after the skips)

LABELS = ("negative", "neutral", "positive")
MAX_LENGTH = 48
# Batches of 1, 3 and 8 rows, padded to their longest: lengths 7, 11 and 48 (the last cut at MAX_LENGTH).
BATCHES = [TEXTS[:1], ["the film", "Angela Merkel visited Paris.", "a bad film " * 3], TEXTS]
PAIRS = (["the film", "who was bad", ""], ["was good", "angela merkel " * 4, "paris"])


def softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def keras_outputs(model, batch):
    """What token_ids.onnx must give, from the Keras model's raw outputs and each output's definition."""
    outputs = model(batch, training=False)
    if isinstance(outputs, dict) and "sequence_output" in outputs:  # a backbone
        sequence = keras.ops.convert_to_numpy(outputs["sequence_output"])
        return {"sequence_output": sequence, "embeddings": numpy_mean_pool(sequence, batch["padding_mask"])}
    if isinstance(outputs, dict):  # QA
        return {name: keras.ops.convert_to_numpy(value) for name, value in outputs.items()}
    logits = keras.ops.convert_to_numpy(outputs)
    if getattr(model, "num_classes", None) == 1:
        return {"logits": logits, "score": logits[:, 0]}
    probabilities = 1 / (1 + np.exp(-logits)) if getattr(model, "multi_label", False) else softmax(logits)
    return {"logits": logits, "probabilities": probabilities}


MODELS = {  # name: (model builder, ExportSpec)
    "classifier": (lambda: BertClassifier(tiny_backbone(), 3, label_names=list(LABELS)),
                   ExportSpec("classifier", MAX_LENGTH, label_names=LABELS)),
    "multi_label": (lambda: BertClassifier(tiny_backbone(), 3, label_names=list(LABELS), multi_label=True),
                    ExportSpec("classifier", MAX_LENGTH, label_names=LABELS, multi_label=True)),
    "regressor": (lambda: BertClassifier(tiny_backbone(), 1), ExportSpec("classifier", MAX_LENGTH, num_texts=2)),
    "backbone": (tiny_backbone, ExportSpec("backbone", MAX_LENGTH)),
    "token_classifier": (lambda: BertTokenClassifier(tiny_backbone(), NER_TAGS),
                         ExportSpec("token_classifier", MAX_LENGTH, label_names=tuple(NER_TAGS))),
    "question_answerer": (lambda: BertQuestionAnswerer(tiny_backbone()),
                          ExportSpec("question_answerer", MAX_LENGTH, num_texts=2)),
}


@pytest.fixture(scope="module")
def exported(tokenizer, tmp_path_factory):
    """{name: (Keras model, export folder)}, exported on first use."""
    made = {}

    def get(name):
        if name not in made:
            build, spec = MODELS[name]
            model = build()
            out = tmp_path_factory.mktemp("onnx") / name
            export_onnx(model, tokenizer, spec, out)
            made[name] = model, out
        return made[name]

    return get


@pytest.mark.parametrize("name", MODELS)
def test_onnxruntime_gives_the_keras_outputs_at_any_batch_size_and_length(name, exported, tokenizer):
    model, out = exported(name)
    runner = session(out / "token_ids.onnx")
    names = [output.name for output in runner.get_outputs()]
    batches = [tokenizer(texts, max_length=MAX_LENGTH, padding="longest") for texts in BATCHES]
    if MODELS[name][1].num_texts == 2:
        batches.append(tokenizer(*PAIRS, max_length=MAX_LENGTH, padding="longest"))
    assert [batch["token_ids"].shape for batch in batches[:3]] == [(1, 7), (3, 11), (8, MAX_LENGTH)]
    for batch in batches:
        expected = keras_outputs(model, batch)
        got = dict(zip(names, runner.run(None, int64_inputs(batch))))
        assert sorted(got) == sorted(expected)
        for key, value in expected.items():
            np.testing.assert_allclose(got[key], value, atol=1e-4, err_msg=f"{name} {key} {batch['token_ids'].shape}")


@pytest.mark.parametrize("name", ["classifier", "token_classifier"])
def test_inputs_are_int64_with_dynamic_batch_and_length_axes_and_export_json_says_so(name, exported, tokenizer):
    model, out = exported(name)
    runner = session(out / "token_ids.onnx")
    assert [(value.name, value.type, value.shape) for value in runner.get_inputs()] == [
        (key, "tensor(int64)", ["batch", "length"]) for key in ("token_ids", "segment_ids", "padding_mask")]
    assert sorted(path.name for path in out.iterdir()) == ["export.json", "token_ids.onnx", "tokenizer_config.json",
                                                           "vocab.txt"]
    assert (out / "vocab.txt").read_text().splitlines() == tokenizer.vocabulary()
    export = json.loads((out / "export.json").read_text())
    assert (export["format"], export["quantize"], export["padding"], export["model_kind"]) == (
        "onnx", "none", "longest", name)
    assert export["files"] == {"token_ids.onnx": (out / "token_ids.onnx").stat().st_size}
    ids = ["int64", ["batch", "length"]]
    classes = len(LABELS) if name == "classifier" else len(NER_TAGS)
    shape = ["batch", classes] if name == "classifier" else ["batch", "length", classes]
    assert export["signatures"] == {"token_ids.onnx": {
        "inputs": {"token_ids": ids, "segment_ids": ids, "padding_mask": ids},
        "outputs": {"logits": ["float32", shape], "probabilities": ["float32", shape]}}}


def op_types(path):
    """How many nodes of each op type the ONNX file `path` holds."""
    import collections

    import onnx

    return collections.Counter(node.op_type for node in onnx.load(path).graph.node)


def optimized(path, out):
    """An onnxruntime session on the ONNX file `path` at its extended graph optimizations, and how many nodes of
    each op type the graph it runs holds (written to `out`)."""
    options = onnxruntime.SessionOptions()
    options.optimized_model_filepath = str(out)
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    run = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return run, op_types(out)


@pytest.mark.parametrize("name", ["backbone", "question_answerer"])
def test_layer_norms_and_gelus_are_one_kernel_each_in_onnxruntime(name, exported, tmp_path):
    """Each layer norm (the embeddings' and two a layer) is one LayerNormalization node, and each exact GELU the
    x / sqrt 2 -> Erf -> + 1 form that onnxruntime's own optimizer fuses into one Gelu kernel (as in Hugging Face's
    exports): nothing left of TensorFlow's op-by-op forms, and the optimized graph onnxruntime runs holds them."""
    import onnx

    model, out = exported(name)
    layers = (model if name == "backbone" else model.backbone).get_config()["num_layers"]
    nodes = onnx.load(out / "token_ids.onnx").graph.node
    written = op_types(out / "token_ids.onnx")
    assert (written["LayerNormalization"], written["Erf"]) == (1 + 2 * layers, layers)
    assert written["GlobalAveragePool"] == written["Neg"] == 0, written
    made_by = {output: node.op_type for node in nodes for output in node.output}
    assert [made_by[node.input[0]] for node in nodes if node.op_type == "Erf"] == ["Div"] * layers

    _, run = optimized(out / "token_ids.onnx", tmp_path / "optimized.onnx")
    assert run["LayerNormalization"] + run["SkipLayerNormalization"] == 1 + 2 * layers, run
    assert run["Gelu"] + run["BiasGelu"] == layers and run["Erf"] == 0, run


def test_each_dense_layer_is_one_matmul_on_its_inputs(tokenizer, tmp_path):
    """A dense layer on (batch, length, width) is one MatMul on those inputs with its bias's Add right after it, as
    in Hugging Face's exports, not tf2onnx's tensordot (a Reshape to (-1, width), MatMul, a Reshape back), so that
    onnxruntime fuses each GELU with the bias before it (BiasGelu); the outputs are Keras's. The biases are made
    nonzero (all zeros at init, and TensorFlow folds their addition away)."""
    import onnx

    model = BertTokenClassifier(tiny_backbone(), NER_TAGS)
    rng = np.random.default_rng(0)
    for weight in model.weights:
        if weight.path.endswith("bias"):
            weight.assign(rng.normal(size=weight.shape).astype("float32"))
    export_onnx(model, tokenizer, MODELS["token_classifier"][1], tmp_path / "ner")
    graph = onnx.load(tmp_path / "ner" / "token_ids.onnx").graph
    made_by = {output: node for node in graph.node for output in node.output}
    constants = {tensor.name: onnx.numpy_helper.to_array(tensor) for tensor in graph.initializer}
    matmuls = [node for node in graph.node if node.op_type == "MatMul" and node.input[1] in constants]
    flattened = [node.name for node in matmuls if made_by[node.input[0]].op_type == "Reshape"
                 and list(constants.get(made_by[node.input[0]].input[1], [])) == [-1, constants[node.input[1]].shape[0]]]
    assert len(matmuls) == 4 * model.backbone.get_config()["num_layers"] + 1 and not flattened, flattened
    biased = [node for node in matmuls if [reader.op_type for reader in graph.node if node.output[0] in reader.input]
              == ["Add"]]
    assert len(biased) == len(matmuls)
    run, kernels = optimized(tmp_path / "ner" / "token_ids.onnx", tmp_path / "optimized.onnx")
    assert kernels["BiasGelu"] == model.backbone.get_config()["num_layers"], kernels
    batch = tokenizer(BATCHES[1], max_length=MAX_LENGTH, padding="longest")
    got = run.run(["logits"], int64_inputs(batch))[0]
    np.testing.assert_allclose(got, keras_outputs(model, batch)["logits"], atol=1e-5)


def test_attention_is_two_matmuls_on_heads_first_transposes(exported):
    """Each layer's attention is written as Hugging Face's exports write it: a MatMul of the queries and the
    transposed keys, one of the probabilities and the values, on 4-axis Transposes; none of the 5-axis
    transposes and ReduceProd shape arithmetic that tf2onnx lowers Keras's einsums to (`tensorflow_attention`)."""
    import collections

    import onnx

    from kbert.backend_speedups import active

    if not active("tensorflow_attention"):
        pytest.skip("KBERT_SPEEDUPS turns tensorflow_attention off")
    model, out = exported("backbone")
    nodes = onnx.load(out / "token_ids.onnx").graph.node
    made_by = {output: node.op_type for node in nodes for output in node.output}
    matmul_inputs = collections.Counter(tuple(made_by.get(name) for name in node.input)
                                        for node in nodes if node.op_type == "MatMul")
    layers = model.get_config()["num_layers"]
    assert matmul_inputs[("Transpose", "Transpose")] == matmul_inputs[("Softmax", "Transpose")] == layers, matmul_inputs
    perms = [onnx.helper.get_attribute_value(node.attribute[0]) for node in nodes if node.op_type == "Transpose"]
    assert {len(perm) for perm in perms} == {4} and op_types(out / "token_ids.onnx")["ReduceProd"] == 0, perms


def test_an_albert_backbone_s_layer_norms_are_one_node_each_and_give_the_keras_outputs(tokenizer, tmp_path):
    """ALBERT's layers share one set of weights, whose layer norms' beta is all zeros at init: TensorFlow folds its
    addition away, and each layer norm is still one node (beta zeros), the outputs Keras's."""
    from kbert import BertBackbone
    from tests.export.conftest import VOCAB

    keras.utils.set_random_seed(0)
    model = BertBackbone.from_preset("albert_base", num_layers=2, hidden_dim=64, num_heads=2, intermediate_dim=128,
                                     vocabulary_size=len(VOCAB), max_sequence_length=64)
    export_onnx(model, tokenizer, ExportSpec("backbone", MAX_LENGTH), tmp_path / "albert")
    written = op_types(tmp_path / "albert" / "token_ids.onnx")
    assert (written["LayerNormalization"], written["GlobalAveragePool"]) == (5, 0), written
    batch = tokenizer(BATCHES[1], max_length=MAX_LENGTH, padding="longest")
    got = session(tmp_path / "albert" / "token_ids.onnx").run(["sequence_output"], int64_inputs(batch))[0]
    np.testing.assert_allclose(got, keras_outputs(model, batch)["sequence_output"], atol=1e-5)


def test_dynamic_int8_is_smaller_and_gives_mostly_the_same_labels(exported, tokenizer, tmp_path):
    import onnx

    model, out = exported("classifier")
    export_onnx(model, tokenizer, MODELS["classifier"][1], tmp_path / "int8", quantize="dynamic-int8")
    float_size, int8_size = ((folder / "token_ids.onnx").stat().st_size for folder in (out, tmp_path / "int8"))
    assert int8_size < 0.5 * float_size  # 0.41 here; 0.26 for all-MiniLM-L6-v2, whose matrices weigh more
    operators = {node.op_type for node in onnx.load(tmp_path / "int8" / "token_ids.onnx").graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= operators  # int8 weights, activations quantized on the fly
    assert json.loads((tmp_path / "int8" / "export.json").read_text())["quantize"] == "dynamic-int8"
    texts = [*TEXTS, *PAIRS[0], *PAIRS[1], "the film was bad", "paris was good", "who is angela"]
    batch = tokenizer(texts, max_length=MAX_LENGTH, padding="longest")
    expected = keras_outputs(model, batch)["probabilities"]
    got = session(tmp_path / "int8" / "token_ids.onnx").run(["probabilities"], int64_inputs(batch))[0]
    assert np.abs(got - expected).max() < 0.01  # 2e-4 here
    assert (got.argmax(-1) == expected.argmax(-1)).mean() >= 0.9  # all 17 here


def test_unknown_quantization_is_refused_before_anything_is_written(exported, tokenizer, tmp_path):
    model, _ = exported("classifier")
    for quantize in ("float16", "int8", "int4"):
        with pytest.raises(ExportError, match=re.escape(f"quantize must be one of {QUANTIZATIONS} for ONNX")):
            export_onnx(model, tokenizer, MODELS["classifier"][1], tmp_path / "out", quantize=quantize)
    assert list(tmp_path.iterdir()) == []


def run_export(argv, monkeypatch, capsys):
    """apps/export.py ARGV as its `__main__` runs it: (exit code, stdout, stderr)."""
    cli_errors = app_module("cli_errors")
    monkeypatch.setattr("sys.argv", ["apps/export.py"])
    try:
        cli_errors.run(app_module("export").main, argv, prog="export.py")
        code = 0
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def test_the_app_exports_a_run_folder_to_onnx(exported, tokenizer, tmp_path, monkeypatch, capsys):
    """apps/export.py --format onnx on a sentiment run folder: the summary, and onnxruntime gives the run's model's
    probabilities; a quantization ONNX lacks, or --metadata, is one line, exit 2, nothing written."""
    from kbert.training import write_run_folder

    model, _ = exported("classifier")
    write_run_folder(tmp_path / "run", model, tokenizer, {"task": "sentiment", "max_length": 24}, {"loss": [1.0]})
    base = ["--model", str(tmp_path / "run"), "--format", "onnx"]
    for extra, message in [(["--quantize", "float16"], "--quantize float16 is not offered for --format onnx"),
                           (["--metadata"], "--metadata applies to --format tflite only")]:
        code, _, err = run_export([*base, *extra, "--out", str(tmp_path / "refused")], monkeypatch, capsys)
        assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "refused").exists()
    code, out, err = run_export([*base, "--out", str(tmp_path / "onnx"), "--json"], monkeypatch, capsys)
    assert code == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert (summary["format"], summary["model_kind"], summary["max_length"], summary["padding"]) == (
        "onnx", "classifier", 24, "longest")
    assert set(summary["files"]) == {"token_ids.onnx", "vocab.txt", "tokenizer_config.json", "export.json"}
    reloaded, _, _ = load_exportable(tmp_path / "run")
    batch = tokenizer(TEXTS, max_length=24, padding="longest")
    got = session(tmp_path / "onnx" / "token_ids.onnx").run(["probabilities"], int64_inputs(batch))[0]
    np.testing.assert_allclose(got, keras_outputs(reloaded, batch)["probabilities"], atol=1e-4)


def tokenizer_op_ids(vocabulary_file, texts):
    """onnxruntime-extensions' BertTokenizer op (lower-casing, accents stripped) on each text, one call each."""
    from onnx import TensorProto, helper
    from onnxruntime_extensions import get_library_path

    outputs = ["input_ids", "token_type_ids", "attention_mask", "offset_mapping"]
    node = helper.make_node("BertTokenizer", ["text"], outputs, domain="ai.onnx.contrib", do_lower_case=1,
                            strip_accents=1, vocab_file=vocabulary_file.read_text("utf-8"))
    graph = helper.make_graph([node], "tokenizer", [helper.make_tensor_value_info("text", TensorProto.STRING, [None])],
                              [helper.make_tensor_value_info(name, TensorProto.INT64, None) for name in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.contrib", 1)])
    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(get_library_path())
    runner = onnxruntime.InferenceSession(model.SerializeToString(), options)
    return [runner.run(["input_ids"], {"text": np.array([text], dtype=object)})[0].tolist() for text in texts]


def test_no_string_model_the_extensions_tokenizer_gives_other_ids(minilm_dir):
    """Why token_ids.onnx ships without a string-in model: onnxruntime-extensions' BertTokenizer gives kbert's
    (and Hugging Face's) ids on English and Latin-1 accents, but not where lower-casing or accent stripping leaves
    Latin-1, on Hangul, on punctuation outside ASCII, on control and format characters (texts of
    tests/text/test_parity.py's HARD_STRINGS and SQuAD). If this fails, the op was fixed: reconsider the string
    model."""
    pytest.importorskip("onnxruntime_extensions")
    from kbert.text import BertTokenizer
    from tests.text.reference import rows

    same = ["Café naïve façade Ångström Øresund", "ÉCOLE ÇA VA? Ünïcödé", "don't can't it's O'Neil's",
            "日本語のテキスト、中文", "!!!??? ... --- *** ((()))", "The film was good!"]
    other = ["Pāli and Mahāyāna", "Ivan Meštrović", "ΟΔΟΣ ΣΑΣ", "Привет, Ёжик", "İstanbul", "한국어",
             "x⟩y", "ctrl\x00chars", "zero\ufeffbom", "replacement \ufffd char"]
    kbert_ids = rows(BertTokenizer.from_hf(minilm_dir)(same + other, max_length=512, padding="longest"))
    op_ids = tokenizer_op_ids(minilm_dir / "vocab.txt", same + other)
    assert op_ids[: len(same)] == kbert_ids[: len(same)]
    assert [text for text, a, b in zip(other, op_ids[len(same):], kbert_ids[len(same):]) if a == b] == []
