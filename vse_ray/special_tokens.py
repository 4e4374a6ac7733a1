"""The special tokens of the caption vocabularies vse_ray writes (VSE++ ``vocab.py`` convention) and their
ids: the data writes them, the models read them (a released vocabulary numbers them otherwise: models take
their ids through `RetrievalModel.vocab_ids`)."""

SPECIAL_TOKENS = ("<pad>", "<unk>", "<start>", "<end>")
PAD, UNK, START, END = range(len(SPECIAL_TOKENS))
MASK = "<mask>"  # the caption augmentation's token (VSE∞); added after the words when a run needs it
