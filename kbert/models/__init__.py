from kbert.models.bert_backbone import BertBackbone
from kbert.models.sentence_encoder import SentenceEncoder
