"""Evaluation metrics on predictions (numpy in, floats out)."""

from kbert.metrics.classification import accuracy, confusion_matrix, macro_f1, multi_label_scores
from kbert.metrics.correlation import pearson, spearman
from kbert.metrics.entity_f1 import entity_scores, format_entity_scores, get_entities
from kbert.metrics.squad import exact_match, f1_score, normalize_answer, squad_scores
