"""Peer engines that need their own environments (see envs.py) and their driver scripts."""
