"""The page at / in a real browser: headless Debian Chromium (tools/browser.sh installs it), driven by playwright,
against real servers of tiny models of every kind, each answer the page shows compared with the server's own JSON
for the same input. Screenshots go to test-results/serve_page_<kind>.png."""

import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch",
                                reason="drives a browser against the server, whatever the backend: one backend (torch)")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) is missing: pip install playwright")
expect = sync_api.expect
expect.set_options(timeout=30_000)  # the first answer of a model includes its warm-up, on a busy machine

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = pathlib.Path("/usr/bin/chromium")
# What works on these machines (closed network): no background connections, no sandbox as root
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "test-results"
TOKEN = "page-test-token"
MAX_TEXT_CHARS = 200
NLI_LABELS = ["entailment", "neutral", "contradiction"]
TOPICS = ["sports", "politics", "arts", "science"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


class CommandServer:
    """apps/serve.py in its own process, as a person starts it; `url` waits until it listens."""

    def __init__(self, folder, *args):
        self.ready_file, self.log = folder / "port", folder / "serve.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(ROOT / "apps" / "serve.py"), *args, "--port", "0", "--ready-file",
                 str(self.ready_file)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        self._url = None

    @property
    def url(self):
        deadline = time.monotonic() + 240
        while self._url is None:
            if self.process.poll() is not None:
                pytest.fail(f"apps/serve.py ended with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            if self.ready_file.is_file() and self.ready_file.read_text():
                self._url = f"http://127.0.0.1:{int(self.ready_file.read_text())}/"
            elif time.monotonic() > deadline:
                pytest.fail(f"apps/serve.py did not listen within 240 s: {self.log.read_text()[-2000:]}")
            else:
                time.sleep(0.1)
        return self._url

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class ThreadServer:
    """`make_app(model)` under uvicorn in a thread of this process, so that the models are built once."""

    def __init__(self, served_model):
        import uvicorn

        from kbert_serving import make_app

        config = uvicorn.Config(make_app(served_model), host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            assert self.thread.is_alive(), "uvicorn stopped before it listened"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}/"

    def stop(self):
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture(scope="module")
def command_server(tmp_path_factory):
    """bert_tiny's sentence embeddings behind a token, taking texts of at most MAX_TEXT_CHARS."""
    server = CommandServer(tmp_path_factory.mktemp("serve"), "bert_tiny", "--token", TOKEN,
                           "--max-text-chars", str(MAX_TEXT_CHARS))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def servers(command_server):
    """A server of each kind (classifier variants apart), on bert_tiny with random weights; the heads' weights are
    scaled up so that the answers are not all near uniform."""
    import kbert
    from kbert_serving.served_model import KerasServedModel, served_length

    keras.utils.set_random_seed(7)
    models = {
        "classifier": kbert.BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=NLI_LABELS,
                                                       sequence_length=64),
        "multi_label": kbert.BertClassifier.from_preset("bert_tiny", num_classes=4, label_names=TOPICS,
                                                        multi_label=True, sequence_length=64),
        "regressor": kbert.BertClassifier.from_preset("bert_tiny", num_classes=1, sequence_length=64),
        "token_classifier": kbert.BertTokenClassifier.from_preset("bert_tiny", label_names=TAGS,
                                                                  sequence_length=64),
        "question_answerer": kbert.BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=64),
        "sentence_encoder": kbert.BertSentenceEncoder.from_preset("bert_tiny", sequence_length=64),
        "masked_lm": kbert.BertPretrainer.from_preset("bert_tiny", next_sentence=False, sequence_length=64),
    }
    for name in ("classifier", "multi_label", "token_classifier"):
        head = models[name].get_layer("logits")
        head.kernel.assign(head.kernel * 60)
    bias = models["masked_lm"].get_layer("mlm_head").bias
    bias.assign(keras.random.normal(bias.shape, stddev=3.0, seed=7))
    names = {"classifier": "tiny_nli", "multi_label": "tiny_topics", "regressor": "tiny_similarity",
             "token_classifier": "tiny_ner", "question_answerer": "tiny_squad", "sentence_encoder": "tiny_embeddings",
             "masked_lm": "tiny_mlm"}
    started = {}
    try:
        for kind, model in models.items():
            preprocessor = model.preprocessor
            served = KerasServedModel(model, preprocessor.tokenizer, served_length(model), names[kind], "bert_tiny")
            started[kind] = ThreadServer(served)
        yield {kind: server.url for kind, server in started.items()}
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing: tools/browser.sh installs Debian's chromium")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A new tab (its own sessionStorage); the test fails on any script error in the page."""
    context = browser.new_context(viewport={"width": 960, "height": 720})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"the page's script failed: {errors}"


def server_answer(url, body, token=None, path="v1/predict"):
    """`(status, JSON)` of POST `path`, asked by the test itself."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url + path, json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def predictions(url, body):
    """The server's predictions for `body`, asked by the test itself."""
    status, found = server_answer(url, body)
    assert status == 200, found
    return found["predictions"]


def opened(page, url):
    page.goto(url)
    expect(page.locator("#form")).to_be_visible()
    return page


def submitted(page, body, press=None):
    """Submits the form (a click, or the key `press` in the focused field), checks that the page sent `body`,
    and returns the response."""
    with page.expect_response("**/v1/predict") as response:
        if press:
            page.keyboard.press(press)
        else:
            page.click("#submit")
    assert response.value.request.post_data_json == body
    return response.value


def percent(shown):
    assert shown.endswith("%"), shown
    return float(shown[:-1]) / 100


def close(shown, value, decimals):
    """`shown` (a number written with `decimals` decimals) is `value` rounded."""
    return abs(float(shown) - value) <= 0.5 * 10.0**-decimals + 1e-9


def screenshot(page, kind):
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"serve_page_{kind}.png", full_page=True)


def shown_bars(page):
    return {row.get_attribute("data-label"): (percent(row.locator(".bar-value").text_content()),
                                              "chosen" in row.get_attribute("class"))
            for row in page.locator("#result .bar-row").all()}


def test_classifier_shows_the_label_and_a_bar_per_class(page, servers):
    premise, hypothesis = "A man plays a guitar on stage.", "Nobody <b>makes</b> music."
    opened(page, servers["classifier"])
    expect(page.locator("#pair")).to_be_visible()  # NLI labels: the pair box is there at once
    expect(page.locator("#model-facts")).to_contain_text("keras (torch)")
    page.fill("#text", premise)
    page.fill("#pair", hypothesis)
    body = {"texts": [premise], "pairs": [hypothesis]}
    submitted(page, body, press="Control+Enter")
    [answer] = predictions(servers["classifier"], body)
    assert page.text_content("#label") == answer["label"]
    assert close(100 * percent(page.text_content("#probability")), 100 * answer["probability"], 1)
    bars = shown_bars(page)
    assert list(bars) == NLI_LABELS
    for name, probability in answer["probabilities"].items():
        assert close(100 * bars[name][0], 100 * probability, 1), (name, bars[name], probability)
        assert bars[name][1] == (name == answer["label"])
    assert "null" not in page.text_content("#result")
    expect(page.locator("#latency")).to_have_text(re.compile(r"200 · \d+ ms"))
    screenshot(page, "classifier")


def test_an_nli_classifier_answers_zero_shot_labels_with_a_bar_each(page, servers):
    """Zero-shot (the box), not a pair: the page posts Hugging Face's shape to v1/zero-shot-classification and shows
    the server's labels in its order with their scores; checking the pair box again leaves zero-shot."""
    text = "A man plays a guitar on stage."
    opened(page, servers["classifier"])
    expect(page.locator("#labels")).to_be_hidden()
    page.check("#use-labels")
    expect(page.locator("#labels")).to_be_visible()
    expect(page.locator("#pair")).to_be_hidden()
    page.fill("#text", text)
    page.fill("#labels", "music, sports ,politics,")
    body = {"inputs": text, "parameters": {"candidate_labels": ["music", "sports", "politics"]}}
    with page.expect_response("**/v1/zero-shot-classification") as response:
        page.click("#submit")
    assert response.value.request.post_data_json == body
    status, answer = server_answer(servers["classifier"], body, path="v1/zero-shot-classification")
    assert status == 200, answer
    bars = shown_bars(page)
    assert list(bars) == answer["labels"] and [chosen for _, chosen in bars.values()] == [True, False, False]
    for (shown, _), score in zip(bars.values(), answer["scores"]):
        assert close(100 * shown, 100 * score, 1)
    assert page.text_content("#label") == answer["labels"][0]
    screenshot(page, "zero_shot")
    page.check("#use-pair")
    expect(page.locator("#labels")).to_be_hidden()
    assert not page.is_checked("#use-labels")


def test_multi_label_shows_every_class_and_the_chosen(page, servers):
    text = "The minister scored at the opera."
    opened(page, servers["multi_label"])
    expect(page.locator("#pair")).to_be_hidden()  # no NLI labels: one text unless asked
    page.fill("#text", text)
    submitted(page, {"texts": [text]})
    [answer] = predictions(servers["multi_label"], {"texts": [text]})
    bars = shown_bars(page)
    assert list(bars) == TOPICS
    assert [name for name, (_, chosen) in bars.items() if chosen] == answer["labels"]
    for name, probability in answer["probabilities"].items():
        assert close(100 * bars[name][0], 100 * probability, 1)
    assert page.text_content("#label") == (", ".join(answer["labels"]) or "none above the threshold")
    screenshot(page, "multi_label")


def test_regressor_shows_the_score_and_a_pair_when_asked(page, servers):
    body = {"texts": ["A man plays a guitar."], "pairs": ["A man plays an instrument."]}
    opened(page, servers["regressor"])
    page.check("#use-pair")
    page.fill("#text", body["texts"][0])
    page.fill("#pair", body["pairs"][0])
    submitted(page, body)
    [answer] = predictions(servers["regressor"], body)
    assert close(page.text_content("#score"), answer["score"], 4)
    page.uncheck("#use-pair")
    page.fill("#text", "  ")
    submitted(page, {"texts": ["  "]})
    [answer] = predictions(servers["regressor"], {"texts": ["  "]})
    expect(page.locator("#result .headline")).to_have_text("No prediction")
    expect(page.locator("#note")).to_have_text(answer["note"])


def test_token_classifier_marks_each_entity_in_the_text(page, servers):
    text = "🙂 Angela Merkel met Emmanuel Macron in Paris on Tuesday, with <i>Siemens</i>."
    opened(page, servers["token_classifier"])
    page.fill("#text", text)
    submitted(page, {"texts": [text]})
    entities = predictions(servers["token_classifier"], {"texts": [text]})[0]["entities"]
    assert entities, "the random model tags no entity here: the check below would check nothing"
    marks = page.locator("#entities-text mark.entity").all()
    assert [(mark.get_attribute("data-type"), mark.locator(".entity-text").text_content()) for mark in marks] == \
        [(entity["type"], entity["text"]) for entity in sorted(entities, key=lambda entity: entity["start"])]
    for mark, entity in zip(marks, sorted(entities, key=lambda entity: entity["start"])):
        kind, score = mark.locator(".tag").text_content().split(" ")
        assert kind == entity["type"] and close(score, entity["score"], 2)
    shown_text = page.evaluate("""() => { const shown = document.querySelector('#entities-text').cloneNode(true);
        shown.querySelectorAll('.tag').forEach((tag) => tag.remove()); return shown.textContent; }""")
    assert shown_text == text  # every character once, in order, as text (the <i> is not markup)
    assert page.locator("#result i").count() == 0
    assert page.locator("#entity-table tbody tr").count() == len(entities)
    screenshot(page, "token_classifier")


def test_question_answerer_marks_the_answer_in_its_context(page, servers):
    context = "The Eiffel Tower 🗼 was completed in 1889 for the World's Fair in Paris. It is 330 metres tall."
    question = "When was the Eiffel Tower completed?"
    opened(page, servers["question_answerer"])
    expect(page.locator("#text")).to_be_hidden()
    page.fill("#context", context)
    page.fill("#question", question)
    submitted(page, {"questions": [question], "contexts": [context]})
    [answer] = predictions(servers["question_answerer"], {"questions": [question], "contexts": [context]})
    assert answer["text"], "the random model found no span: the check below would check nothing"
    assert page.text_content("#answer-mark") == answer["text"] == context[answer["start"]:answer["end"]]
    assert page.text_content("#answer") == answer["text"]
    assert page.text_content("#answer-context") == context
    assert close(100 * percent(page.text_content("#probability")), 100 * answer["probability"], 1)
    screenshot(page, "question_answerer")


def test_question_answerer_says_when_there_is_no_answer(page, servers):
    no_answer = {"question": "Who?", "text": "", "note": "no answer span found", "alternatives": []}
    page.route("**/v1/predict", lambda route: route.fulfill(json={"predictions": [no_answer]}))
    opened(page, servers["question_answerer"])
    page.click("#submit")
    expect(page.locator("#no-answer")).to_have_text("No answer in the context")
    expect(page.locator("#note")).to_have_text("no answer span found")


def test_sentence_encoder_shows_the_similarity_matrix(page, servers):
    sentences = ["A man plays the guitar.", "Someone is playing <b>music</b>.", "The stock market fell today."]
    opened(page, servers["sentence_encoder"])
    page.fill("#text", "\n".join([sentences[0], "", *sentences[1:], "  "]))  # blank lines are no sentences
    submitted(page, {"texts": sentences})
    embeddings = np.array([answer["embedding"] for answer in predictions(servers["sentence_encoder"],
                                                                       {"texts": sentences})])
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    rows = page.locator("#matrix tbody tr").all()
    shown = np.array([[float(cell) for cell in row.locator("td").all_text_contents()] for row in rows])
    np.testing.assert_allclose(shown, embeddings @ embeddings.T, atol=0.0005 + 1e-6)
    assert page.locator("#matrix tbody th").all_text_contents() == [f"{i + 1}. {s}" for i, s in enumerate(sentences)]
    assert page.locator("#result b").count() == 0
    screenshot(page, "sentence_encoder")


def test_masked_lm_shows_each_masks_candidates(page, servers):
    opened(page, servers["masked_lm"])
    expect(page.locator("#text-label")).to_have_text("Text, [MASK] where a word is to be guessed")
    assert page.input_value("#text") == "Paris is the [MASK] of France."  # the example, with the model's mask token
    text = "a [MASK] <b>film</b> and [MASK]"
    page.fill("#text", text)
    submitted(page, {"texts": [text]})
    [answer] = predictions(servers["masked_lm"], {"texts": [text]})
    assert page.locator("#result .filled").all_text_contents() == [mask[0]["sequence"] for mask in answer["masks"]]
    rows = page.locator("#result .bar-row").all()
    candidates = [candidate for mask in answer["masks"] for candidate in mask]
    assert [row.get_attribute("data-label") for row in rows] == [c["token_str"] for c in candidates]
    for row, candidate in zip(rows, candidates):
        assert close(100 * percent(row.locator(".bar-value").text_content()), 100 * candidate["score"], 1)
    assert [("chosen" in row.get_attribute("class")) for row in rows] == [True, *[False] * 4] * 2
    assert page.locator("#result b").count() == 0
    screenshot(page, "masked_lm")


def test_token_is_asked_for_then_kept_and_errors_are_shown(page, command_server):
    url = command_server.url
    page.goto(url)
    expect(page.locator("#token")).to_be_visible()
    expect(page.locator("#auth-why")).to_contain_text("A bearer token is required")
    expect(page.locator("#form")).to_be_hidden()
    page.fill("#token", "not-the-token")
    page.click("#token-submit")
    expect(page.locator("#auth-why")).to_contain_text("The bearer token is wrong.")
    page.fill("#token", TOKEN)
    page.press("#token", "Enter")
    expect(page.locator("#form")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('kbert-serve-token')") == TOKEN
    page.reload()
    expect(page.locator("#form")).to_be_visible()  # the tab keeps the token
    long_text = "a" * (MAX_TEXT_CHARS + 1)
    page.fill("#text", long_text)
    submitted(page, {"texts": [long_text]})
    status, refusal = server_answer(url, {"texts": [long_text]}, TOKEN)
    assert status == 413
    expect(page.locator("#error")).to_have_text(f"413: {refusal['error']}")
    expect(page.locator("#result")).to_be_hidden()
    screenshot(page, "error")
    page.fill("#text", "A man plays the guitar.\nA woman sings.")
    submitted(page, {"texts": ["A man plays the guitar.", "A woman sings."]})
    expect(page.locator("#matrix tbody tr")).to_have_count(2)
    expect(page.locator("#error")).to_be_hidden()
