"""The README's "Fine-tune from Python" block runs as written, on the tiny preset."""

import pathlib
import re

import keras
import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def python_api_block():
    section = README.read_text().split("## Fine-tune from Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.skipif(keras.config.backend() != "torch",
                    reason="runs once (torch); tests/tasks/test_task_api.py covers each task on every backend")
def test_the_readme_python_api_block_runs(tmp_path, monkeypatch):
    code = python_api_block()
    assert "BertQuestionAnswerer" in code and "BertPretrainer" in code
    monkeypatch.chdir(tmp_path)  # model.save("sst2.keras") writes here
    code = re.sub(r'"(all_minilm_l6_v2|bert_mini)"', '"bert_tiny"', code)  # the same code, small
    namespace = {}
    exec(compile(code, str(README), "exec"), namespace)
    assert (tmp_path / "sst2.keras").is_file()
    assert namespace["model"].predict(["not bad at all"], verbose=0).shape == (1, 2)
