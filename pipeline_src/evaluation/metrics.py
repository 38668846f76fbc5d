"""The metrics an accuracy table holds (the one list; kept free of imports so the command line can
offer them without loading pandera). How each is counted: :mod:`.evaluate`."""

# exact_match, answer and position_match count samples of a cell; token_accuracy counts the
# response tokens of a cell (teacher forcing), so its ``n`` is a number of tokens.
METRICS = ("exact_match", "answer", "position_match", "token_accuracy")
PER_TOKEN = ("token_accuracy",)
