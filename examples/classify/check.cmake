# Runs classify on the generated image and model folder and compares its top-5 with torch's
# (tests/data/models/classify/expected.txt, from tests/gen/gen_vision_models.py).
# WEIGHTS=pt: a folder of config.json and the torch.save'd model.pt (made under WORK).
if(WEIGHTS STREQUAL "pt")
  file(REMOVE_RECURSE ${WORK}/classify_pt)
  file(COPY ${DATA}/config.json DESTINATION ${WORK}/classify_pt)
  file(COPY_FILE ${DATA}/model.pt ${WORK}/classify_pt/pytorch_model.bin)
  set(WEIGHTS ${WORK}/classify_pt)
endif()
set(PROGRAM ${PROGRAM} ${DATA}/image.ppm ${WEIGHTS} --labels ${DATA}/labels.txt ${EXTRA})
set(EXPECTED ${DATA}/expected.txt)
set(WANT_NAME "torch's top-5")
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/CompareOutput.cmake)
