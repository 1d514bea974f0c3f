# Runs classify on the generated image and model folder and compares its top-5 with torch's
# (tests/data/models/classify/expected.txt, from tests/gen/gen_vision_models.py).
# WEIGHTS=pt: a folder of config.json and the torch.save'd model.pt (made under WORK).
if(WEIGHTS STREQUAL "pt")
  file(REMOVE_RECURSE ${WORK}/classify_pt)
  file(COPY ${DATA}/config.json DESTINATION ${WORK}/classify_pt)
  file(COPY_FILE ${DATA}/model.pt ${WORK}/classify_pt/pytorch_model.bin)
  set(WEIGHTS ${WORK}/classify_pt)
endif()
execute_process(COMMAND ${PROGRAM} ${DATA}/image.ppm ${WEIGHTS} --labels ${DATA}/labels.txt ${EXTRA}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
file(READ ${DATA}/expected.txt want)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "classify exited with ${rc}")
endif()
if(NOT out STREQUAL want)
  message(FATAL_ERROR "top-5 differs from torch's.\n--- torch:\n${want}\n--- classify:\n${out}")
endif()
