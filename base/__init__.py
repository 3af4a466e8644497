"""The base every stage stands on: the data model and its sources, the file contracts, the language
packs, io and transactions, errors. It imports no stage and nothing of the application."""
