import pathlib


def plot_history(history, path, title=""):
    """Writes a PNG of training curves: one panel per metric, train and validation together.

    Args:
        history: dict of metric name -> list of per-epoch values (`model.fit(...).history`).
        path: where to write the PNG.
        title: str. Figure title.

    Example:
    >>> import tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "curves.png"
    >>> plot_history({"loss": [1.0, 0.5], "val_loss": [1.1, 0.7]}, out)
    >>> out.stat().st_size > 1000
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [name for name in history if not name.startswith("val_") and name != "learning_rate"]
    figure, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.5), squeeze=False)
    for axis, name in zip(axes[0], names):
        for key, label in ((name, "train"), (f"val_{name}", "validation")):
            if key in history:
                values = history[key]
                axis.plot(range(1, len(values) + 1), values, marker="o", label=label)
        axis.set_title(name)
        axis.set_xlabel("epoch")
        axis.legend()
        axis.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(pathlib.Path(path), dpi=100)
    plt.close(figure)
