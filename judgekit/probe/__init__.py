"""Probing a judge: do its verdicts move when nothing that matters changes?"""
