import struct

from kbert.training.curves import plot_history

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) in pixels, from the IHDR chunk that follows the PNG signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_one_panel_per_metric_of_a_three_epoch_history(tmp_path):
    """loss and accuracy get a panel each (val_ curves share them; the learning rate has none): a figure of
    2 x 4.5 by 3.5 inches at 100 dpi is 900 x 350 pixels."""
    history = {"loss": [1.0, 0.6, 0.4], "accuracy": [0.5, 0.7, 0.8], "val_loss": [1.1, 0.8, 0.7],
               "val_accuracy": [0.4, 0.6, 0.7], "learning_rate": [1e-3, 5e-4, 0.0]}
    plot_history(history, tmp_path / "curves.png", title="toy")
    assert png_size(tmp_path / "curves.png") == (900, 350)


def test_a_metric_without_validation_still_gets_its_panel(tmp_path):
    plot_history({"loss": [3.0, 2.0, 1.0]}, str(tmp_path / "loss.png"))
    assert png_size(tmp_path / "loss.png") == (450, 350)
