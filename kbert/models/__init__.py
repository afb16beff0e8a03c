from kbert.models.bert_backbone import BertBackbone
from kbert.models.load_backbone import load_backbone
