"""kbert_core.context: one rule for whether a QA --context is a file or the text itself (apps/qa.py and
apps/edge_predict.py)."""

import keras
import pytest

from kbert_core.context import context_file

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def test_a_file_a_folder_the_text_itself_and_a_mistyped_file_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "article.txt").write_text("Ann sings.")
    (tmp_path / "docs").mkdir()
    assert context_file("article.txt") == tmp_path.joinpath("article.txt").relative_to(tmp_path)
    assert context_file("Ann sings and Bob plays.") is None and context_file("x" * 5000) is None
    for value, message in [("docs", "--context docs is a folder"), ("artcle.txt", "--context artcle.txt: no such file"),
                           ("docs/a", "--context docs/a: no such file"), ("", "--context is empty"),
                           (" ", "--context is empty")]:
        with pytest.raises(ValueError, match=message):
            context_file(value)
