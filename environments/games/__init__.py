"""Cooperative and competitive games: repeated matrix games and tic-tac-toe."""
