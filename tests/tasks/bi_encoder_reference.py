"""sentence-transformers' own losses on given embeddings, in a process of its own (torch): the reference
of tests/tasks/test_bert_sentence_encoder.py.

argv: IN OUT. IN (.npz): `pairs` (2, n, dim) with `scores` (n,), and `triplets` (3, m, dim). OUT (.npz):
`cosine` (CosineSimilarityLoss), `ranking_pairs` and `ranking_triplets` (MultipleNegativesRankingLoss,
scale 20, its default), each computed from the embeddings alone.
"""

import sys

import numpy as np
import torch
from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss, MultipleNegativesRankingLoss

given = np.load(sys.argv[1])
pairs, triplets = (list(torch.tensor(given[key])) for key in ("pairs", "triplets"))
labels = torch.tensor(given["scores"])
ranking = MultipleNegativesRankingLoss(model=None)
np.savez(sys.argv[2],
         cosine=CosineSimilarityLoss(model=None).compute_loss_from_embeddings(pairs, labels).item(),
         ranking_pairs=ranking.compute_loss_from_embeddings(pairs, None).item(),
         ranking_triplets=ranking.compute_loss_from_embeddings(triplets, None).item())
