from kbert.models.bert_backbone import BertBackbone
