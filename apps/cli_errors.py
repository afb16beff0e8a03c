"""The top-level error handler of every app: one line that says what is wrong, and a non-zero exit.

    if __name__ == "__main__":
        run(main)

An error the app foresees (a bad argument, a missing or malformed file, a busy or foreign
run folder) prints `APP: error: MESSAGE` on stderr, as argparse does for usage errors, and
exits 2; a failure of the machine (a full or read-only disk) exits 1; Ctrl-C exits 130.
Anything else is a bug: one line naming the exception, "run with --debug for the
traceback", exit 1. With `--debug` (anywhere before a `--`) errors keep their traceback.
This module imports neither Keras nor TensorFlow: `--help` stays fast.
"""

import argparse
import os
import re
import sys

DEBUG = "--debug"
MAX_MESSAGE_CHARS = 500
# ValueError covers UnicodeDecodeError, json's JSONDecodeError and kbert's format and run folder errors;
# FloatingPointError kbert.training.NonFiniteLossError (a run that diverged, e.g. on too high a --lr).
INPUT_ERRORS = (ValueError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
                PermissionError, FloatingPointError)


def run(main, argv=None, prog=None):
    """Runs `main(argv)` and turns an error into one line on stderr and an exit code.

    Args:
        main: the app's `main(argv)`.
        argv: list of str, default `sys.argv[1:]`. `--debug` is taken out before `main` sees it.
        prog: str. The name in messages, default the script's file name.

    Example:
    >>> def main(argv):
    ...     raise FileNotFoundError(2, "No such file or directory", "train.tsv")
    >>> run(main, [], prog="app.py")
    Traceback (most recent call last):
    SystemExit: 2
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = prog or os.path.basename(sys.argv[0])
    end = argv.index("--") if "--" in argv else len(argv)
    if DEBUG in argv[:end]:
        return main([arg for i, arg in enumerate(argv) if i >= end or arg != DEBUG])
    try:
        return main(argv)
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            raise
        _fail(prog, str(exit.code), 2)  # sys.exit("message"): the app's own word on its input
    except KeyboardInterrupt:
        _fail(prog, "interrupted", 130)
    except BrokenPipeError:  # stdout closed early (`| head`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except INPUT_ERRORS as error:
        _fail(prog, describe(error), 2)
    except OSError as error:
        _fail(prog, describe(error), 1)
    except Exception as error:  # noqa: BLE001 (the one place that catches everything)
        _fail(prog, f"{type(error).__name__}: {describe(error)} (run with {DEBUG} for the traceback)", 1)


def add_debug_option(parser):
    """Lists `--debug` in `parser`'s help (`run` takes it out of the arguments before parsing)."""
    parser.add_argument(DEBUG, action="store_true", default=argparse.SUPPRESS,
                        help="on an error, show the traceback instead of one line")


def describe(error):
    """One line for `error`: an OS error names its file, long messages are cut.

    Example:
    >>> describe(FileNotFoundError(2, "No such file or directory", "data/train.tsv"))
    'data/train.tsv: No such file or directory'
    >>> describe(ValueError("line one\\n   line two"))
    'line one line two'
    """
    if isinstance(error, UnicodeDecodeError):
        message = f"not UTF-8 text (byte {error.object[error.start]:#04x}); run with {DEBUG} to see where"
    elif isinstance(error, OSError) and error.strerror and error.filename is not None:
        names = " -> ".join(str(name) for name in (error.filename, error.filename2) if name is not None)
        message = f"{names}: {error.strerror}"
    else:
        message = str(error) or type(error).__name__
        if isinstance(error, KeyError) and error.args:
            message = f"missing key {error.args[0]!r}"
    message = re.sub(r"\s*\n\s*", " ", message).strip()
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return message


def _fail(prog, message, code):
    sys.stdout.flush()
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)
