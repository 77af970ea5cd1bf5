"""Language-model learners: self-play of one decoder in every seat of text games
(``selfplay.make_train``), its settings (``config``), the model and reply scoring
(``policy``) and the games' evaluations (``evaluation``)."""
