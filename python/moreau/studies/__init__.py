"""moreau.studies: the studies of ../shared/design/SCIENCE.md, each one command
(``python3 -m moreau.studies.locomotion``: Study B)."""
