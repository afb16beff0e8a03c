"""Long texts cut into BERT windows: QA's strided windows and NER's cut at words, in numpy and in TensorFlow ops."""
