"""What every app shares on the command line: help that shows defaults, `--json`, `--verbose`,
and a start of TensorFlow that does not print its start-up lines.

    parser = app_parser(__doc__)      # or task_cli.task_parser; add_output_options(each command)
    args = parse_args(parser, argv)   # parses, then starts Keras quietly (unless --verbose)
    import keras, kbert               # only now: --help and usage errors answer without them
    with for_people(args):            # with --json, what the library prints for people goes to stderr
        result = ...
    emit(args, [result], describe)    # one JSON object a line, or describe(result) for people

This module imports neither Keras nor TensorFlow until `parse_args` has parsed.
"""

import argparse
import contextlib
import copy
import json
import os
import sys

from cli_errors import add_debug_option


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's lines and adds "(default: ...)" to each option that has a default.

    Example:
    >>> parser = argparse.ArgumentParser(prog="app", formatter_class=HelpFormatter)
    >>> _ = parser.add_argument("--epochs", type=int, default=3)
    >>> _ = parser.add_argument("--out", help="folder (default: a new one)")
    >>> "--epochs EPOCHS  (default: 3)" in parser.format_help(), "a new one) (default" in parser.format_help()
    (True, False)
    """

    def _format_action(self, action):
        if not action.help and action.option_strings and _has_default(action):
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    def _get_help_string(self, action):
        if not _has_default(action) or "default" in action.help:
            return action.help
        return f"{action.help} (default: %(default)s)"


def _has_default(action):
    return not any(action.default is value for value in (None, False, argparse.SUPPRESS))


def app_parser(description=None):
    """An argparse parser of an app without commands: `HelpFormatter`, --json, --verbose, --debug."""
    parser = argparse.ArgumentParser(description=description, formatter_class=HelpFormatter)
    add_output_options(parser)
    add_debug_option(parser)
    return parser


def add_output_options(parser):
    """Adds --json and --verbose to `parser` (an app, or each command of an app)."""
    parser.add_argument("--json", action="store_true",
                        help="print JSON, one object a line, on stdout (messages for people go to stderr)")
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up lines (CUDA, oneDNN, absl), hidden by default")
    return parser


def add_dtype_option(parser):
    """Adds --dtype (float32 or bfloat16) to a command that runs the model on new inputs."""
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                        help="compute in bfloat16: faster on CPUs with bfloat16 instructions (AVX-512 BF16, AMX), "
                             "outputs within about 1e-3 of float32")
    return parser


def parse_args(parser, argv=None):
    """`parser.parse_args(argv)`, then `start_quietly`; with --verbose, `KBERT_VERBOSE=1` instead."""
    args = parser.parse_args(argv)
    if getattr(args, "verbose", False):
        os.environ["KBERT_VERBOSE"] = "1"  # kbert then shows what TensorFlow and CUDA print as they start
    else:
        start_quietly()
    return args


def start_quietly():
    """Loads Keras and TensorFlow (when installed) without their start-up lines, as `import kbert` does
    (`kbert.start_up`), and sets TF_CPP_MIN_LOG_LEVEL=1 (no INFO lines later; unless set already).
    Other lines they print (Python warnings among them) still show."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    from kbert.start_up import import_tensorflow

    try:
        import_tensorflow()
    except ImportError:
        pass


@contextlib.contextmanager
def for_people(args):
    """Within the block, `print` goes to stdout, or to stderr with --json: stdout keeps JSON lines only."""
    if not args.json:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


def emit(args, results, describe=str):
    """Prints each of `results`: as one JSON line with --json, else `describe(result)`.

    Example:
    >>> emit(argparse.Namespace(json=True), [{"label": "positive", "probability": 0.9}])
    {"label": "positive", "probability": 0.9}
    >>> emit(argparse.Namespace(json=False), [{"label": "positive"}], lambda result: result["label"])
    positive
    """
    for result in results:
        print(json.dumps(result, ensure_ascii=False) if args.json else describe(result), flush=args.json)
