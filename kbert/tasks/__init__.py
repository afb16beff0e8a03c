"""Task models: a backbone plus a head, trained with `model.fit`."""

from kbert.tasks.bert_classifier import BertClassifier
from kbert.tasks.bert_pretrainer import BertPretrainer
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kbert.tasks.bert_token_classifier import BertTokenClassifier
