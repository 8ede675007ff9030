"""moreau.studies: the studies whose protocols docs/studies.md describes, each one command
(``python3 -m moreau.studies.cube``: Study A, contact stiffness and learned dynamics;
``python3 -m moreau.studies.locomotion``: Study B, SHAC and PPO through each contact model;
``python3 -m moreau.studies.gradients``: the usefulness of each contact model's gradient;
``python3 -m moreau.studies.screen``: a reliability screen of a SHAC preset). They write under
results/ and are not part of what a user of the library imports."""
