"""Task models (a backbone, a head and a preprocessor for raw inputs), trained with `model.fit`."""

from kbert.tasks.bert_classifier import BertClassifier
from kbert.tasks.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kbert.tasks.bert_preprocessor import BertPreprocessor
from kbert.tasks.bert_pretrainer import BertPretrainer
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kbert.tasks.bert_question_answerer_preprocessor import BertQuestionAnswererPreprocessor
from kbert.tasks.bert_sentence_encoder import BertSentenceEncoder
from kbert.tasks.bert_sentence_encoder_preprocessor import BertSentenceEncoderPreprocessor
from kbert.tasks.bert_task import BertTask
from kbert.tasks.bert_text_classifier_preprocessor import BertTextClassifierPreprocessor
from kbert.tasks.bert_token_classifier import BertTokenClassifier
from kbert.tasks.bert_token_classifier_preprocessor import BertTokenClassifierPreprocessor
from kbert.tasks.electra_pretrainer import ElectraPretrainer
