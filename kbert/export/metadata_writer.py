"""Writes TFLite metadata into a token-id model with tflite-support's metadata writers.

Run as a script by the Python of `.venv-edge-clients` (`tools/edge_clients_venv.sh` creates it):
tflite-support 0.4.4 needs protobuf<4, so it cannot share kbert's virtualenv. This file imports
tflite-support and the standard library only, never kbert; `kbert.export.runtimes` calls it:

    .venv-edge-clients/bin/python kbert/export/metadata_writer.py request.json

`request.json` holds `model_kind` ("classifier", "question_answerer" or "backbone"), `model` (the
.tflite to read), `out` (where to write), `vocab` (vocab.txt), `labels` (labels.txt or null),
`inputs` (metadata name "ids" / "mask" / "segment_ids" -> TFLite tensor name) and `outputs`
(TFLite tensor name -> metadata name). The metadata is what the runtimes read:

- classifier: `bert_nl_classifier.MetadataWriter.create_for_inference` (BertTokenizer with
  the vocabulary, output "probability" with the label file) for the Task Library's
  `BertNLClassifier` and MediaPipe's `TextClassifier`.
- question_answerer: the same BERT inputs and tokenizer, outputs "start_logits" and
  "end_logits", as the Task Library's `BertQuestionAnswerer` looks them up (tflite-support
  0.4.4's wheel has no question-answerer writer, so the generic `MetadataWriter` writes them).
- backbone: the same BERT inputs and tokenizer, output "embedding", for MediaPipe's
  `TextEmbedder`.
"""

import json
import sys


def write(request):
    from tflite_support.metadata_writers import bert_nl_classifier, metadata_info, writer_utils
    from tensorflow_lite_support.metadata.python.metadata_writers.metadata_writer import MetadataWriter

    model = writer_utils.load_file(request["model"])
    tokenizer = metadata_info.BertTokenizerMd(request["vocab"])
    inputs = request["inputs"]
    ids, mask, segments = inputs["ids"], inputs["mask"], inputs["segment_ids"]
    if request["model_kind"] == "classifier":
        writer = bert_nl_classifier.MetadataWriter.create_for_inference(
            model, tokenizer, [request["labels"]], ids, mask, segments)
    else:
        bert_inputs = metadata_info.BertInputTensorsMd(model, ids, mask, segments, tokenizer_md=tokenizer)
        names = request["outputs"]
        outputs = [metadata_info.TensorMd(name=names[tensor], tensor_name=tensor).create_metadata()
                   for tensor in writer_utils.get_output_tensor_names(model)]
        general = metadata_info.GeneralMd(name=f"kbert {request['model_kind']}",
                                          description="BERT exported by kbert, token ids in")
        writer = MetadataWriter.create_from_metadata(
            model, general.create_metadata(), bert_inputs.create_input_tesnor_metadata(), outputs,
            bert_inputs.get_tokenizer_associated_files(), bert_inputs.create_input_process_unit_metadata())
    writer_utils.save_file(writer.populate(), request["out"])


if __name__ == "__main__":
    with open(sys.argv[1]) as file:
        write(json.load(file))
