"""Hugging Face's side of zero_shot_benchmark.py: transformers' zero-shot-classification pipeline on a Hugging Face
folder (the NLI model kbert exported), in a process of its own (torch + transformers, never beside TensorFlow).

    python benchmarks/hf_zero_shot.py FOLDER JOBS OUT

JOBS is a JSON list of {"texts", "candidate_labels", "hypothesis_template"}; OUT gets, per job, the top label of
each text and the seconds the pipeline took (batches of --batch-size pairs, one thread per core as torch sets it).
"""

import argparse
import json
import pathlib
import time
import warnings

import transformers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("jobs")
    parser.add_argument("out")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    pipeline = transformers.pipeline("zero-shot-classification", model=args.folder, tokenizer=args.folder,
                                     device="cpu")
    results = []
    for job in json.loads(pathlib.Path(args.jobs).read_text("utf-8")):
        start = time.perf_counter()
        answers = pipeline(job["texts"], candidate_labels=job["candidate_labels"],
                           hypothesis_template=job["hypothesis_template"], batch_size=args.batch_size)
        results.append({"top": [answer["labels"][0] for answer in answers], "seconds": time.perf_counter() - start})
    pathlib.Path(args.out).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
