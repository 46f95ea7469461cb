"""The numpy-only core: units and data, the contracts every public function declares,
chips, models and number formats, the roofline, collectives, placement, a deployment and its
serving and training steps. Nothing here imports a chapter, matplotlib or ipywidgets."""
